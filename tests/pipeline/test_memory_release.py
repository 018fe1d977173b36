"""A verify pass, and users going idle, give back what they borrowed: the C allocator's free
pages return to the system."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from harness.context import RuntimeContext
from harness.pipeline import memory, staging
from harness.pipeline import pipeline as pipeline_module
from repositories import MemoryRepository
from tests.support.pipeline import bundle, local_pipeline
from tests.support.polling import eventually

# Fragment the C heap: many 64 KiB buffers (below glibc's mmap threshold, so they live in the
# heap), every one but the last freed, so the heap's top cannot shrink on its own.
FRAGMENTED = """
import sys
from harness.pipeline.memory import release_free_memory

def rss_kib():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4

buffers = [bytearray(64 << 10) for _ in range(1600)]
keep = buffers[-1]
del buffers
before = rss_kib()
released = release_free_memory()
after = rss_kib()
print(released, before - after)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc_trim")
def test_release_returns_the_free_heap_pages_of_a_real_process() -> None:
    out = subprocess.run([sys.executable, "-c", FRAGMENTED], capture_output=True, text=True, check=True).stdout
    released, dropped_kib = out.split()
    assert released == "True"
    assert int(dropped_kib) > 50 << 10  # of the 100 MiB freed, at least half leaves the resident set


async def test_a_verify_pass_releases_free_memory_and_an_ordinary_pass_does_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[None] = []

    def counted() -> bool:
        calls.append(None)
        return True

    monkeypatch.setattr(staging, "release_free_memory", counted)
    market = MemoryRepository([bundle("tool")], name="acme")
    async with local_pipeline(tmp_path, market) as pipeline:
        await pipeline.prepare(RuntimeContext(user_id="alice"))
        await pipeline.prepare(RuntimeContext(user_id="bob"))
        assert calls == []
        await pipeline.stage(verify=True)
        assert len(calls) == 1


async def test_memory_is_given_back_in_a_minute_when_idle_users_were_released(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Released users' memory stays with the allocator until it is given back: once an interval
    in which users were released, never in one in which none were."""
    calls: list[None] = []

    def counted() -> bool:
        calls.append(None)
        return True

    monkeypatch.setattr(memory, "release_free_memory", counted)
    monkeypatch.setattr(pipeline_module, "_GIVE_BACK_EVERY", 0.05)
    async with local_pipeline(tmp_path, user_idle_after=0.2) as pipeline:
        await pipeline.prepare(RuntimeContext(user_id="alice"))
        await anyio.sleep(0.15)
        assert calls == []  # alice is still held: nothing was released
        await anyio.sleep(0.15)
        await pipeline.prepare(RuntimeContext(user_id="bob"))  # alice, idle, is released now
        assert pipeline.cached_users == 1
        await eventually(lambda: _count(calls), lambda count: count == 1, what="memory given back")
        await anyio.sleep(0.15)
        assert len(calls) == 1  # and not again while no one else was released


async def _count(calls: list[None]) -> int:
    return len(calls)
