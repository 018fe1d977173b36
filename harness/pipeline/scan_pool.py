"""The ingest scan spread over worker processes when a market brings enough text to scan.

Scanning is pure Python and holds the GIL: the markets of a cold start would scan one after
another however many threads ask. :class:`ScanPool` hands large batches to worker processes
(``python -m harness.skills.scan_worker``, started on first use and kept while used) and
scans small ones inline (a warm turn, a changed skill, most tests), so it costs nothing until a
cold start needs it. Workers are plain subprocesses talking over their pipes: nothing is forked from a
process with threads, and the application's main module is never imported again.
"""

from __future__ import annotations

import logging
import os
import pickle
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import anyio

from harness.skills.scan_worker import read_frame, write_frame
from harness.skills.scanner import Scanner, ScanVerdict

log = logging.getLogger(__name__)

__all__ = ["DEFAULT_POOL_THRESHOLD", "IDLE_EXIT", "ScanPool", "read_frame", "scan_files", "write_frame"]

DEFAULT_POOL_THRESHOLD = 512 * 1024
"""The bytes a batch must hold before its scan goes to worker processes. Starting a worker costs
a few tenths of a second of CPU (the interpreter, the harness's imports, the rules compiled) and
about 35 MB while it runs. Workers stay while batches keep coming, so a cold start of several
markets pays that once and scans each market's batch on every core while this process clones
and stages the others; a worker left idle for :data:`IDLE_EXIT` seconds exits. A smaller batch
(a warm turn, a changed skill) is scanned here."""
IDLE_EXIT = 60.0
"""Seconds a worker waits for its next batch before it exits (see :mod:`harness.skills.scan_worker`)."""
# A worker idle for longer than this is stopped rather than handed a batch it may never read.
_IDLE_REUSE = IDLE_EXIT - 15.0
_CHUNK = 96 * 1024  # about this much text per task: enough to outweigh sending it

Outcome = ScanVerdict | Exception


class ScanPool:
    """Scans files with a :class:`Scanner`, in worker processes when a batch is large.

    :meth:`scan` blocks (call it from a worker thread; several threads may call it at once) and
    returns, per file, its verdict or the exception its scan raised. A batch under ``threshold``
    bytes, or any batch when ``workers`` is below two, is scanned inline. A worker that fails
    (killed, unreadable answer) is replaced and its part scanned inline; when workers cannot be
    started at all, every batch is scanned inline, with one warning. :meth:`close` stops them.
    """

    def __init__(self, *, workers: int | None = None, threshold: int = DEFAULT_POOL_THRESHOLD) -> None:
        self.workers = workers if workers is not None else min(os.cpu_count() or 1, 4)
        self.threshold = threshold
        self._idle: queue.SimpleQueue[_Worker] = queue.SimpleQueue()
        self._started: list[_Worker] = []
        self._threads: ThreadPoolExecutor | None = None
        self._broken = False
        self._closed = False
        self._lock = threading.Lock()
        self.turns = anyio.CapacityLimiter(1)
        """Where the layers sharing this pool queue their scans (see ``SkillLayer._scan_batch``)."""

    def scan(self, scanner: Scanner, files: Sequence[tuple[str, bytes]]) -> list[Outcome]:
        """One verdict (or the exception raised) per ``(name, bytes)`` of ``files``, in order."""
        size = sum(len(data) for _, data in files)
        if size < self.threshold or self.workers < 2 or self._broken or self._closed:
            return scan_files(scanner, files)
        with self._lock:
            if self._threads is None:
                self._threads = ThreadPoolExecutor(self.workers, thread_name_prefix="harness-scan")
            threads = self._threads
        payload = (scanner.rules, scanner.block_at)
        tasks = [threads.submit(self._run, scanner, payload, chunk) for chunk in _chunks(files, _CHUNK)]
        return [outcome for task in tasks for outcome in task.result()]

    def close(self) -> None:
        """Stop the worker processes (idempotent)."""
        with self._lock:
            self._closed = True
            threads, self._threads = self._threads, None
            started, self._started = self._started, []
        if threads is not None:
            threads.shutdown(wait=True, cancel_futures=True)
        for worker in started:
            worker.stop()

    def _run(self, scanner: Scanner, payload: tuple[Any, ...], chunk: list[tuple[str, bytes]]) -> list[Outcome]:
        worker = self._take()
        if worker is None:
            return scan_files(scanner, chunk)
        try:
            outcomes = worker.call((*payload, chunk))
        except (OSError, EOFError, pickle.UnpicklingError, ValueError) as exc:
            log.warning("a scan worker failed (%s); scanning its part in this process", exc)
            self._drop(worker)
            return scan_files(scanner, chunk)
        worker.idle_since = time.monotonic()
        self._idle.put(worker)
        return outcomes

    def _take(self) -> _Worker | None:
        """An idle worker, a new one while fewer than ``workers`` run, or ``None`` (inline)."""
        while True:
            worker = self._idle_worker()
            if worker is not None:
                return worker
            with self._lock:
                if self._broken or self._closed:
                    return None
                if len(self._started) < self.workers:
                    try:
                        worker = _Worker()
                    except OSError as exc:
                        log.warning("cannot start scan worker processes, scanning in this one: %s", exc)
                        self._broken = True
                        return None
                    self._started.append(worker)
                    return worker
            # Every worker is busy: wait for one (and look again, in case one was dropped).
            worker = self._idle_worker(wait=0.5)
            if worker is not None:
                return worker

    def _idle_worker(self, wait: float = 0.0) -> _Worker | None:
        """An idle worker fit to use, or ``None`` when none is idle (after waiting ``wait``
        seconds for one). Workers that exited, or are about to after idling, are dropped."""
        while True:
            try:
                worker = self._idle.get(timeout=wait) if wait else self._idle.get_nowait()
            except queue.Empty:
                return None
            if worker.usable():
                return worker
            self._drop(worker)
            wait = 0.0  # one may now be started in its place

    def _drop(self, worker: _Worker) -> None:
        worker.stop()
        with self._lock:
            if worker in self._started:
                self._started.remove(worker)


class _Worker:
    """One ``python -m harness.skills.scan_worker`` and its pipes."""

    def __init__(self) -> None:
        # The child finds the harness where this process did, however it was put on the path.
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "harness.skills.scan_worker", str(IDLE_EXIT)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
        )
        self.idle_since = time.monotonic()

    def usable(self) -> bool:
        """Whether the worker still runs and has not idled long enough to be exiting."""
        return self.process.poll() is None and time.monotonic() - self.idle_since < _IDLE_REUSE

    def call(self, request: tuple[Any, ...]) -> list[Outcome]:
        assert self.process.stdin is not None and self.process.stdout is not None
        write_frame(self.process.stdin, request)
        outcomes = read_frame(self.process.stdout)
        if not isinstance(outcomes, list):
            raise ValueError("a scan worker answered with something else than a list")
        return outcomes

    def stop(self) -> None:
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                stream.close()
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def _chunks(files: Sequence[tuple[str, bytes]], size: int) -> list[list[tuple[str, bytes]]]:
    chunks: list[list[tuple[str, bytes]]] = [[]]
    held = 0
    for name, data in files:
        if held >= size:
            chunks.append([])
            held = 0
        chunks[-1].append((name, data))
        held += len(data)
    return chunks


def scan_files(scanner: Scanner, files: Sequence[tuple[str, bytes]]) -> list[Outcome]:
    """Each file scanned alone: its verdict, or the exception a (custom) rule raised (see
    :meth:`Scanner.scan_each`)."""
    return scanner.scan_each(files)
