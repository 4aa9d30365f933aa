"""A time limit for the Dask tests' fits, with the fit on the test's own (main) thread.

The Dask test modules bound every fit against hangs. They used to run each fit on a worker thread
and wait for it with a timeout; but OpenBLAS (0.3.30/0.3.31 here) ignores a thread-count limit set
from any thread but the main one, so the package's one-BLAS-thread contexts (``rffkern._linalg``)
had no effect inside those fits: their LAPACK factorisations ran multi-threaded, up to 100 times
slower on the loaded 2-core test machine (an s = 500 ``eigh``: 5 s against 0.04 s), and the tests
ran a configuration that no fit on the main thread sees. :func:`call_with_time_limit` runs the
fit on the calling thread, as a user's fit runs, and raises ``TimeoutError`` there when the limit
passes (``SIGALRM``: Python runs the handler in the main thread between bytecodes, and the waits on
the cluster are interruptible). Off the main thread, or without ``SIGALRM``, it falls back to a
worker thread and a timed wait, as before.
"""
import concurrent.futures
import signal
import threading


def call_with_time_limit(seconds, fn, *args, **kwargs):
    """``fn(*args, **kwargs)``, raising ``TimeoutError`` if it runs for more than ``seconds``."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        pool = concurrent.futures.ThreadPoolExecutor(1)
        try:
            return pool.submit(fn, *args, **kwargs).result(timeout=seconds)
        finally:
            pool.shutdown(wait=False)

    def expire(signum, frame):
        raise TimeoutError(f"{getattr(fn, '__qualname__', fn)} ran for more than {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return fn(*args, **kwargs)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
