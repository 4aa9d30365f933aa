"""The thread knob follows the ecosystem: OMP_NUM_THREADS and threadpoolctl limit n_jobs=None,
counts beyond the machine are clamped, and importing rffkern leaves the environment alone."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from _helpers import core_has_openmp
from rffkern import kernels
from rffkern._validation import available_cores, resolve_n_threads


def _run(code, **env):
    full = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "GOMP_SPINCOUNT")}
    full.update(env)
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=full, check=True,
                         capture_output=True, text=True, timeout=120)
    return out.stdout.strip()


def test_importing_rffkern_leaves_the_environment_alone():
    code = """
        import os, subprocess
        before = dict(os.environ)
        import rffkern
        print(dict(os.environ) == before)
        print(subprocess.run(["sh", "-c", "echo ${GOMP_SPINCOUNT:-unset}"], capture_output=True,
                             text=True).stdout.strip())
    """
    assert _run(code).split() == ["True", "unset"]


def test_n_jobs_none_follows_omp_num_threads():
    assert _run("from rffkern._validation import resolve_n_threads; print(resolve_n_threads(None))",
                OMP_NUM_THREADS="1") == "1"


def test_no_second_thread_appears_under_omp_num_threads_1():
    # count the process's OS threads around a kernel call that would use every core by default
    code = """
        import os
        import numpy as np
        from rffkern import kernels
        X = np.random.default_rng(0).standard_normal((20000, 32))
        W = np.random.default_rng(1).standard_normal((32, 256))
        before = len(os.listdir("/proc/self/task"))
        kernels.features(X, W)
        print(len(os.listdir("/proc/self/task")) - before)
    """
    if not os.path.isdir("/proc/self/task"):
        pytest.skip("needs Linux /proc to count threads")
    assert _run(code, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1") == "0"


def test_n_jobs_none_follows_threadpoolctl_limits():
    before = resolve_n_threads(None)
    with threadpool_limits(limits=1, user_api="openmp"):
        assert resolve_n_threads(None) == 1
    assert resolve_n_threads(None) == before  # the limit lifted again
    # with no OMP_NUM_THREADS (this process's may be set, as in a one-thread test run), every core;
    # a core built without OpenMP (the macOS and Windows wheels) runs every call on one thread
    code = """
        from rffkern._validation import available_cores, resolve_n_threads
        print(resolve_n_threads(None), available_cores())
    """
    n_threads, cores = map(int, _run(code).split())
    assert n_threads == (cores if core_has_openmp() else 1)


@pytest.mark.parametrize("n_jobs", [50000, 100000])
def test_thread_counts_beyond_the_machine_are_clamped(n_jobs):
    # 100000 used to crash the interpreter (SIGSEGV in libgomp), 50000 to abort it
    assert resolve_n_threads(n_jobs) == available_cores()
    rng = np.random.default_rng(0)
    X, W = rng.standard_normal((50, 5)), rng.standard_normal((5, 16))
    np.testing.assert_array_equal(kernels.features(X, W, n_threads=n_jobs),
                                  kernels.features(X, W, n_threads=1))
