"""Shared test settings: Hypothesis profiles, the per-dtype tolerance table and the Dask tests' loopback cluster."""
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "default", deadline=None, max_examples=40, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "thorough", deadline=None, max_examples=400, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(  # CI: the same examples on every run, so a landing is not a coin flip
    "ci", deadline=None, max_examples=40, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("RFFKERN_HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "default"))

# Absolute tolerances for compiled-vs-reference comparisons, per dtype, scaled by the size of
# the quantity compared (see tests/test_kernels_reference.py for how they are applied).
TOLERANCE = {np.float64: 1e-10, np.float32: 2e-4}


@pytest.fixture(params=[np.float64, np.float32], ids=["f64", "f32"])
def dtype(request):
    return request.param


@pytest.fixture(params=[1, 2], ids=["1thread", "2threads"])
def n_threads(request):
    return request.param


#: Seconds, for every wait on the Dask tests' loopback cluster (its start, its workers, its stop).
DASK_TIMEOUT = 120


@pytest.fixture(scope="session")
def loopback_cluster():
    """A loopback LocalCluster of 2 single-threaded worker processes (bound to 127.0.0.1, no
    dashboard), started by the first Dask test module that asks for it and stopped at the end of
    the session: one start-up for all of them (each starts two processes that import NumPy,
    scikit-learn and rffkern). The Dask test modules skip without dask.distributed."""
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=None, host="127.0.0.1")
    try:
        yield cluster
    finally:
        cluster.close(timeout=DASK_TIMEOUT)


@pytest.fixture(scope="module")
def client(loopback_cluster):
    """A Client of the session's loopback cluster, per test module that asks for it: the default
    client (where Dask computes) for that module only, so the other modules' Dask arrays still
    compute in-process, and closed at the module's end, which releases what its tests left on the
    workers. It first waits for both workers: a test that killed one leaves the nanny's restart.
    Every wait is bounded (DASK_TIMEOUT)."""
    distributed = pytest.importorskip("distributed")
    client = distributed.Client(loopback_cluster, timeout=DASK_TIMEOUT)
    try:
        client.wait_for_workers(2, timeout=DASK_TIMEOUT)
        yield client
    finally:
        client.close(timeout=DASK_TIMEOUT)


@pytest.fixture
def synchronous():
    """Dask's synchronous scheduler for one test, whatever the module's client: for the tests of
    what a Dask fit computes (its model is the same bits on any scheduler, which the tests on the
    cluster show), where the cluster's per-pass round trips (~90 ms each on the 2-core machine)
    would cost more than the fit."""
    dask = pytest.importorskip("dask")
    with dask.config.set(scheduler="sync"):
        yield


@pytest.fixture
def scheduler(request):
    """Where a parametrized Dask test computes, by its (indirect) parameter: ``"cluster"``, the
    module's client of the loopback cluster, or ``"sync"``, Dask's synchronous scheduler (as
    ``synchronous``). For a claim checked over several settings (a Dask fit equals the in-memory
    fit) one setting per estimator runs on the cluster, the others where the cluster's round trips
    cost nothing: the fit is the same bits on any scheduler."""
    if request.param == "cluster":
        yield request.getfixturevalue("client")
    elif request.param == "sync":
        dask = pytest.importorskip("dask")
        with dask.config.set(scheduler="sync"):
            yield None
    else:
        raise ValueError(f"scheduler: 'cluster' or 'sync', not {request.param!r}")
