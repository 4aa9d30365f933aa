"""Package-wide settings: :func:`set_config`, :func:`get_config`, :func:`config_context`.

One setting so far, ``progress_bar``: how the progress of fits run with ``verbose`` > 0 is shown
(:class:`rffkern._progress.ProgressLog`). The settings are process-wide (not per thread):
``rffkern.fit`` trains its two RFFNet variants on worker threads, whose progress follows the
caller's choice.
"""
from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

__all__ = ["set_config", "get_config", "config_context"]

_CONFIG: dict[str, Any] = {"progress_bar": False}


def get_config() -> dict[str, Any]:
    """Return the current settings, as a new dict.

    Returns
    -------
    dict
        ``{"progress_bar": bool}``.

    Examples
    --------
    >>> import rffkern
    >>> rffkern.get_config()
    {'progress_bar': False}
    """
    return dict(_CONFIG)


def set_config(*, progress_bar: bool | None = None) -> None:
    """Change package-wide settings; None leaves a setting as it is.

    Parameters
    ----------
    progress_bar : bool or None, default=None
        True: fits run with ``verbose`` > 0 show each loop of known length (epochs, widths,
        penalties, Metropolis iterations, ``rffkern.fit``'s stages) as a `tqdm
        <https://tqdm.github.io>`_ progress bar on stderr (a widget in a notebook), its latest
        line of details beside it, and print their one-off events (early stopping, a choice
        made) as lines above the bars. False (the start): the lines of
        :class:`rffkern._progress.ProgressLog` on stdout. ``verbose`` still decides what is
        shown; this decides how. Needs ``tqdm`` (``pip install "rffkern[progress]"``).

    Raises
    ------
    ImportError
        ``progress_bar=True`` without tqdm installed.
    TypeError
        ``progress_bar`` not a bool.

    Examples
    --------
    >>> import rffkern
    >>> rffkern.set_config(progress_bar=False)
    >>> rffkern.get_config()["progress_bar"]
    False
    """
    if progress_bar is not None:
        if not isinstance(progress_bar, bool):
            raise TypeError(f"progress_bar must be True, False or None, got {progress_bar!r}")
        if progress_bar:
            _require_tqdm()
        _CONFIG["progress_bar"] = progress_bar


@contextlib.contextmanager
def config_context(*, progress_bar: bool | None = None) -> Iterator[None]:
    """Apply settings to the statements of a ``with`` block, restored afterwards (also on an error).

    Parameters
    ----------
    progress_bar : bool or None, default=None
        As in :func:`set_config`.

    Yields
    ------
    None
        The block runs with the settings.

    Examples
    --------
    >>> import rffkern
    >>> with rffkern.config_context(progress_bar=False):
    ...     rffkern.get_config()["progress_bar"]
    False
    """
    old = get_config()
    set_config(progress_bar=progress_bar)
    try:
        yield
    finally:
        _CONFIG.update(old)


def _require_tqdm() -> None:
    try:
        import tqdm  # noqa: F401
    except ImportError as exc:
        raise ImportError("progress_bar=True needs tqdm: pip install tqdm (or pip install \"rffkern[progress]\")") from exc
