"""Bitwise fingerprints of every public kernel and estimator, for refactors that must not change results.

Run before and after a change and diff the outputs:

    python bench/fingerprint.py > before.txt   # on the old tree
    python bench/fingerprint.py > after.txt    # on the new tree
    diff before.txt after.txt

Each line is ``name sha256-prefix`` of the output's bytes (float64 or float32 as returned), for
fixed inputs and ``random_state=0``, on one thread and on two (the kernels promise the same bits).
"""
from __future__ import annotations

import hashlib
import sys

import numpy as np

import rffkern
from rffkern import kernels


def digest(*arrays) -> str:
    h = hashlib.sha256()
    for a in arrays:
        a = np.ascontiguousarray(np.asarray(a))
        h.update(str(a.dtype).encode())
        h.update(str(a.shape).encode())
        h.update(a.tobytes())
    return h.hexdigest()[:16]


def kernel_rows(n_threads):
    rng = np.random.default_rng(0)
    rows = []
    for dtype in (np.float64, np.float32):
        X = rng.standard_normal((257, 13)).astype(dtype)
        W = rng.standard_normal((13, 70)).astype(dtype)
        b = rng.uniform(0, 2 * np.pi, 70).astype(dtype)
        th = rng.uniform(0.5, 1.5, 13).astype(dtype)
        C = rng.standard_normal((70, 3)).astype(dtype)
        Y = rng.standard_normal((257, 3)).astype(dtype)
        t = np.dtype(dtype).name
        rows.append((f"features[{t}]", digest(kernels.features(X, W, b, theta=th, n_threads=n_threads))))
        rows.append((f"features_pair[{t}]", digest(kernels.features(X, W, theta=th, pair=True,
                                                                     n_threads=n_threads))))
        rows.append((f"predict[{t}]", digest(kernels.predict(X, W, b, C, theta=th, n_threads=n_threads))))
        rows.append((f"gram[{t}]", digest(*kernels.gram(X, W, b, Y, theta=th, n_threads=n_threads))))
        for loss, T in (("squared", Y), ("logistic", (Y > 0).astype(dtype)),
                        ("softmax", np.eye(3, dtype=dtype)[rng.integers(0, 3, 257)])):
            rows.append((f"loss_and_grad[{t},{loss}]",
                         digest(*kernels.loss_and_grad(X, T, W, b, C, theta=th, loss=loss,
                                                       n_threads=n_threads))))
        state = kernels.AdamState(C.shape, 13, dtype)
        th2, C2 = th.copy(), C.copy()
        value = kernels.train_epoch(X, Y, rng.permutation(257), W, b, th2, C2, state, batch_size=16,
                                    learning_rate=1e-2, l2_coef=1e-3, n_threads=n_threads)
        rows.append((f"train_epoch[{t}]", digest(np.asarray(value), th2, C2)))
        x = rng.standard_normal((5, 64)).astype(dtype)
        rows.append((f"fwht[{t}]", digest(rffkern.fwht(x, n_threads=n_threads))))
    return rows


def estimator_rows(n_jobs):
    from rffkern.datasets import make_gse1

    X, y, _ = make_gse1(400, random_state=0)
    yc = (y > np.median(y)).astype(int)
    y3 = np.digitize(y, np.quantile(y, [1 / 3, 2 / 3]))
    rows = []
    transformers = [
        rffkern.RandomFourierFeatures(64, random_state=0, n_jobs=n_jobs),
        rffkern.Fastfood(64, random_state=0, n_jobs=n_jobs),
        rffkern.StructuredOrthogonalFeatures(64, random_state=0, n_jobs=n_jobs),
        rffkern.OrthogonalRandomFeatures(64, random_state=0, n_jobs=n_jobs),
    ]
    for t in transformers:
        rows.append((type(t).__name__, digest(t.fit_transform(X))))
    regressors = [
        rffkern.RFFNetRegressor(64, max_iter=5, random_state=0, n_jobs=n_jobs),
        rffkern.RFFRidge(64, alpha=[1e-3, 1e-1], random_state=0, n_jobs=n_jobs),
        rffkern.SRFFRegressor(32, random_state=0, n_jobs=n_jobs, **_srff_small()),
        rffkern.EERFRegressor(32, random_state=0, n_jobs=n_jobs),
        rffkern.AdaptiveRFFRegressor(32, random_state=0, n_jobs=n_jobs, **_adaptive_small()),
    ]
    for r in regressors:
        rows.append((type(r).__name__, digest(r.fit(X, y).predict(X))))
    classifiers = [
        rffkern.RFFNetClassifier(64, max_iter=5, random_state=0, n_jobs=n_jobs),
        rffkern.RFFRidgeClassifier(64, random_state=0, n_jobs=n_jobs),
        rffkern.EERFClassifier(32, random_state=0, n_jobs=n_jobs),
        rffkern.AdaptiveRFFClassifier(32, random_state=0, n_jobs=n_jobs, **_adaptive_small()),
    ]
    for target_name, target in (("binary", yc), ("3class", y3)):
        for c in classifiers:
            c.fit(X, target)
            out = c.predict_proba(X) if hasattr(c, "predict_proba") else c.decision_function(X)
            rows.append((f"{type(c).__name__}[{target_name}]", digest(c.predict(X), out)))
    return rows


def _srff_small():
    return {"max_iter": 5}


def _adaptive_small():
    return {"n_iter": 5}


def main():
    rows = []
    for n in (1, 2):
        rows += [(f"{name} threads={n}", h) for name, h in kernel_rows(n)]
        rows += [(f"{name} n_jobs={n}", h) for name, h in estimator_rows(n)]
    for name, h in rows:
        print(f"{name:55s} {h}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
