"""A verify pass gives back what it borrowed: the C allocator's free pages return to the system."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from harness.context import RuntimeContext
from harness.pipeline import staging
from repositories import MemoryRepository
from tests.support.pipeline import bundle, local_pipeline

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
