"""Giving back to the operating system the memory a large pass borrowed.

A verify pass reads every staged file; the C allocator keeps the freed buffers for reuse, so
without help a long-running process's resident memory steps up with each pass and never comes
down. :func:`release_free_memory` asks glibc to return its free pages (``malloc_trim``), which is
what the stager does after each verify pass. Elsewhere (musl, macOS, Windows) it does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import sys
from collections.abc import Callable

__all__ = ["release_free_memory"]


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim``, or None where the C library has none."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        trim = libc.malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim


def release_free_memory() -> bool:
    """Return the C allocator's free pages to the operating system; True when any were.

    Blocking (it walks every allocator arena, a few milliseconds for a process of tens of MiB):
    call it from a worker thread, not the event loop."""
    trim = _malloc_trim()
    return bool(trim(0)) if trim is not None else False
