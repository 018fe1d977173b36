"""Why the event loop was late: a sampler thread and garbage-collection timings.

``StallTracer`` watches a heartbeat the event loop sets with every tick of a short timer. When
the loop is late by more than a threshold, a sampler thread records where the main thread is
(``sys._current_frames()``). When the sampler itself wakes late, something held the GIL in
native code, and the main thread's stack then shows what it was just doing. Garbage collections
are timed through ``gc.callbacks``. ``report()`` groups the stalls by the code they were found in.
"""

from __future__ import annotations

import gc
import math
import sys
import threading
import time
import traceback
from collections import Counter, defaultdict
from dataclasses import dataclass, field

__all__ = ["StallTracer"]

_SAMPLE = 0.002  # the sampler's period (seconds)
_FRAMES = 6  # frames of our own code kept per sample
_GROUPS = 15  # groups of stalls reported


@dataclass(slots=True)
class _Stall:
    beat: float
    late: float = 0.0  # how late the loop was at the last sample (seconds)
    gil: float = 0.0  # the longest the sampler itself waited past its period
    stacks: list[str] = field(default_factory=list)


class StallTracer:
    """Samples the main thread while the event loop is late by more than ``threshold`` seconds."""

    def __init__(self, threshold: float) -> None:
        self.threshold = threshold
        self.beat = math.inf  # set by the loop's timer while it runs, inf when it does not
        self._main = threading.main_thread().ident
        self._stop = threading.Event()
        self._stalls: dict[float, _Stall] = {}  # the heartbeat a stall began after -> the stall
        self._gc_started = (0.0, 0.0)  # wall and thread CPU time
        self._gc: dict[int, list[tuple[float, float]]] = defaultdict(list)  # generation -> (wall, CPU) (seconds)
        self._spans: list[tuple[str, float, float]] = []  # (what, began, ended): see mark()
        self._thread = threading.Thread(target=self._sample, name="stall-sampler", daemon=True)

    def __enter__(self) -> StallTracer:
        gc.callbacks.append(self._on_gc)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        gc.callbacks.remove(self._on_gc)

    def _on_gc(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._gc_started = (time.perf_counter(), time.thread_time())
        else:
            ended, began = time.perf_counter(), self._gc_started[0]
            self._gc[info["generation"]].append((ended - began, time.thread_time() - self._gc_started[1]))
            if info["generation"]:
                self.mark(f"gc generation {info['generation']}", began, ended)

    def mark(self, what: str, began: float, ended: float) -> None:
        """Record that ``what`` ran from ``began`` to ``ended`` (``time.perf_counter()``): stalls
        that overlap it are counted against it in the report."""
        if ended - began > self.threshold / 4:
            self._spans.append((what, began, ended))

    def _sample(self) -> None:
        expected = time.perf_counter() + _SAMPLE
        while not self._stop.wait(_SAMPLE):
            now = time.perf_counter()
            waited, expected = now - expected, now + _SAMPLE
            beat = self.beat
            late = now - beat
            if late < self.threshold:
                continue
            frame = sys._current_frames().get(self._main or 0)
            stall = self._stalls.setdefault(beat, _Stall(beat))
            stall.late = max(stall.late, late)
            stall.gil = max(stall.gil, waited)
            if frame is not None:
                stall.stacks.append(_where(frame))

    def report(self) -> str:
        """The stalls that overlapped a marked span (see :meth:`mark`), by what ran and how long;
        the others grouped by where the main thread most often was during each."""
        groups: dict[str, list[_Stall]] = defaultdict(list)
        marked: dict[str, list[tuple[_Stall, float]]] = defaultdict(list)
        for stall in self._stalls.values():
            overlaps = [(what, min(e, stall.beat + stall.late) - max(b, stall.beat)) for what, b, e in self._spans]
            what, overlap = max(overlaps, key=lambda o: o[1], default=("", 0.0))
            if overlap > stall.late / 2:
                marked[what].append((stall, overlap))
                continue
            top = max(set(stall.stacks), key=stall.stacks.count) if stall.stacks else "(no sample)"
            groups[top].append(stall)
        lines = [f"stalls over {self.threshold * 1000:.0f} ms: {len(self._stalls)}"]
        for what, pairs in sorted(marked.items(), key=lambda item: -len(item[1])):
            lines.append(
                f"{len(pairs)} stalls mostly during {what}: worst stall {max(s.late for s, _ in pairs) * 1000:.0f} ms, "
                f"of it during {what} {max(o for _, o in pairs) * 1000:.0f} ms"
            )
        ranked = sorted(groups.items(), key=lambda item: -sum(s.late for s in item[1]))
        for top, stalls in ranked[:_GROUPS]:
            worst = max(s.late for s in stalls) * 1000
            gil = max(s.gil for s in stalls) * 1000
            lines.append(f"\n{len(stalls)} stalls, worst {worst:.0f} ms, sampler kept from the GIL up to {gil:.0f} ms:")
            lines.append(top)
        tracked = gc.get_objects()
        kinds = Counter(type(o).__name__ for o in tracked).most_common(8)
        lines.append(f"objects the collector tracks: {len(tracked)}, frozen: {gc.get_freeze_count()}; most: {kinds}")
        for generation, durations in sorted(self._gc.items()):
            walls, cpus = sorted(d[0] for d in durations), sorted(d[1] for d in durations)
            lines.append(
                f"gc generation {generation}: {len(durations)} collections, median {walls[len(walls) // 2] * 1000:.2f} ms "
                f"(CPU {cpus[len(cpus) // 2] * 1000:.2f} ms), worst {walls[-1] * 1000:.1f} ms (CPU {cpus[-1] * 1000:.1f} ms)"
            )
        return "\n".join(lines)


def _where(frame: object) -> str:
    """The innermost frames of a stack, outside asyncio's own."""
    entries = [e for e in traceback.extract_stack(frame) if "/asyncio/" not in e.filename]  # type: ignore[arg-type]
    return "\n".join(f"  {e.filename.rsplit('/', 2)[-1]}:{e.lineno} {e.name}: {e.line}" for e in entries[-_FRAMES:])
