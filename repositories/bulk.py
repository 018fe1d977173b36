"""No garbage collection while a bulk load of skills builds objects that all survive it.

Parsing a market of 10,000 skills allocates a few hundred thousand objects (skills, entries,
listings, catalog parts) and keeps every one. Python's collector counts those allocations and
runs meanwhile, each full collection walking every object the process holds, and frees nothing:
a quarter of a cold start or a restart. :func:`collections_paused` turns automatic collection
off for such a load, in whichever thread runs it, and back on when the last load running ends
(only if it was on before the first began: an application that turned it off keeps it off). A
load of fewer than :data:`BULK` items leaves the collector alone, so the turns of a busy process
never hold it off.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["BULK", "collections_paused"]

BULK = 1000
"""The number of items (skills, entries) from which a load pauses collection."""

_lock = threading.Lock()
_loads = 0
_was_enabled = False


@contextmanager
def collections_paused(items: int) -> Iterator[None]:
    """Pause automatic garbage collection while the block builds ``items`` objects' worth of
    survivors, when ``items`` is at least :data:`BULK`; loads in several threads share one pause."""
    if items < BULK:
        yield
        return
    global _loads, _was_enabled
    with _lock:
        if _loads == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _loads += 1
    try:
        yield
    finally:
        with _lock:
            _loads -= 1
            if _loads == 0 and _was_enabled:
                gc.enable()
