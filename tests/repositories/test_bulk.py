"""The collector pause of bulk loads: only for bulk, restored exactly, shared by threads."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator

import pytest

from repositories.bulk import BULK, collections_paused


@pytest.fixture(autouse=True)
def _collector_on() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


def test_a_small_load_leaves_the_collector_alone() -> None:
    with collections_paused(BULK - 1):
        assert gc.isenabled()


def test_a_bulk_load_pauses_collection_and_restores_it_even_when_it_fails() -> None:
    with pytest.raises(RuntimeError), collections_paused(BULK):
        assert not gc.isenabled()
        raise RuntimeError("the load failed")
    assert gc.isenabled()


def test_an_application_that_turned_collection_off_keeps_it_off() -> None:
    gc.disable()
    with collections_paused(BULK):
        pass
    assert not gc.isenabled()


def test_loads_in_two_threads_share_one_pause() -> None:
    inside, leave = threading.Event(), threading.Event()
    seen: list[bool] = []

    def other_load() -> None:
        with collections_paused(BULK):
            inside.set()
            leave.wait(10)
        seen.append(gc.isenabled())  # the first load still runs: still paused

    thread = threading.Thread(target=other_load)
    with collections_paused(BULK):
        thread.start()
        assert inside.wait(10)
        leave.set()
        thread.join(10)
        assert not gc.isenabled()
    assert seen == [False]
    assert gc.isenabled()
