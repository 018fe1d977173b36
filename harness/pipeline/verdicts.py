"""Market scan verdicts kept across restarts, so a process does not rescan what it scanned before.

The ingest scan costs CPU for every file it reads; a restart over 10,000 market skills
would pay it all again. :class:`VerdictStore` keeps one verdict per scanned file (a skill's
SKILL.md and each of its other text files) in ``.scan-verdicts.json`` of a
machine-owned folder of the workspace (the pipeline uses ``.skills-cache/``, beside the staging
manifest, or ``.harness/`` when nothing is staged), keyed by the SHA-256 of the scanned file (its
name and bytes, hashed from what the market returned, never from the record) under the
scanner's rule-set version (:attr:`Scanner.version`: every rule's fields and the blocking
severity). A record of other rules is never reused.

Both folders are machine-owned (out of the model's file tools; a sandbox sees ``.skills-cache``
read-only and ``.harness`` not at all), and the file is authenticated all the same: an
HMAC-SHA256 over its body with a per-workspace secret (``.scan.key`` beside it, created with 32
random bytes and mode 0600 on first use). The body is written compact with sorted keys and the
MAC appended as the document's last key, so a reader checks the bytes as they are stored instead
of encoding 100,000 records again. A file whose MAC does not verify, or that does not parse, is
ignored whole (everything is rescanned and the file is rewritten); a verdict is never trusted on
the file's word alone. A file of an earlier format is rescanned the same way, without a warning.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import anyio

from filesystems import MACHINE_DIR, AbstractFilesystem, machine_key
from harness.skills.scanner import Scanner, ScanVerdict

log = logging.getLogger(__name__)

__all__ = ["ScanMany", "VerdictStore", "content_key"]

ScanMany = Callable[[list[tuple[str, bytes]]], list[ScanVerdict | Exception]]
"""Scans ``(name, bytes)`` pairs, each alone: one verdict or the exception raised per pair."""

_FILE = ".scan-verdicts.json"
_KEY = ".scan.key"
_FORMAT = 2
# The document's end: ``,"mac":"`` + 64 hex digits + ``"}``; the body is what precedes it, closed.
_MAC_TAIL = b',"mac":"'
_TAIL_LENGTH = len(_MAC_TAIL) + 64 + 2
_MAX_RECORDS = 100_000


def content_key(name: str, data: bytes) -> str:
    """The SHA-256 a verdict is stored under: the scanned file's name and bytes."""
    digest = hashlib.sha256(name.encode("utf-8", "surrogateescape"))
    digest.update(b"\0")
    digest.update(data)
    return digest.hexdigest()


class VerdictStore:
    """Scan verdicts by content key for one scanner, loaded once and saved after new scans.

    :meth:`get` and :meth:`put` are plain dictionary operations (safe from the worker thread that
    parses a layer); :meth:`load` and :meth:`save` do the I/O, each at most once per call, and
    never raise: a store that cannot be read or written only costs rescans. :meth:`load` only
    reads; the pipeline calls :meth:`save` only on turns that may write (not ``stage=False``).
    """

    def __init__(self, filesystem: AbstractFilesystem, scanner: Scanner, *, folder: str = MACHINE_DIR) -> None:
        self.filesystem = filesystem
        self.scanner = scanner
        self.path = f"{folder.strip('/')}/{_FILE}"
        self.key_path = f"{folder.strip('/')}/{_KEY}"
        self._verdicts: dict[str, dict[str, Any]] = {}
        self._used: set[str] = set()
        self._secret: bytes | None = None
        self._loaded = False
        self._dirty = False
        self._lock = anyio.Lock()
        self.rejected = False  # the last load found a file that failed its check

    def get(self, key: str) -> ScanVerdict | None:
        """The stored verdict for ``key`` (see :func:`content_key`), or ``None``."""
        record = self._verdicts.get(key)
        if record is None:
            return None
        try:
            verdict = _CLEAN if record is _CLEAN_RECORD else ScanVerdict.from_dict(record)
        except (KeyError, TypeError, ValueError):
            return None
        self._used.add(key)
        return verdict

    def verdict(self, files: Mapping[str, bytes]) -> ScanVerdict:
        """The scanner's verdict on ``files``, file by file: a file whose content key has a
        stored verdict is not rescanned, any other is scanned alone and its verdict remembered
        (so a skill whose SKILL.md changed does not rescan its unchanged scripts)."""
        outcome = self.verdicts([files])[0]
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    def verdicts(
        self, batch: Sequence[Mapping[str, bytes]], scan: ScanMany | None = None
    ) -> list[ScanVerdict | Exception]:
        """:meth:`verdict` of each skill's ``files`` in ``batch``, every file not stored yet
        scanned in one call of ``scan`` (``(name, bytes)`` pairs in, one verdict or exception
        each out; default: this store's scanner, inline). A skill one of whose files raised gets
        that exception instead of a verdict."""
        keys = [[content_key(name, data) for name, data in files.items()] for files in batch]
        known: dict[str, ScanVerdict | Exception] = {}
        wanted: dict[str, tuple[str, bytes]] = {}
        for files, names in zip(batch, keys, strict=True):
            for key, item in zip(names, files.items(), strict=True):
                if key not in wanted and key not in known:
                    stored = self.get(key)
                    if stored is None:
                        wanted[key] = item
                    else:
                        known[key] = stored
        pairs = list(wanted.values())
        outcomes = scan(pairs) if scan is not None else self.scanner.scan_each(pairs)
        for key, outcome in zip(wanted, outcomes, strict=True):
            known[key] = outcome
            if isinstance(outcome, ScanVerdict):
                self.put(key, outcome)
        results: list[ScanVerdict | Exception] = []
        for names in keys:
            found = [known[key] for key in names]
            failed = next((f for f in found if isinstance(f, Exception)), None)
            results.append(failed or _combined([f for f in found if isinstance(f, ScanVerdict)]))
        return results

    def put(self, key: str, verdict: ScanVerdict) -> None:
        """Remember a fresh verdict (saved by the next :meth:`save`)."""
        self._verdicts[key] = _shared_clean(verdict.as_dict())
        self._used.add(key)
        self._dirty = True

    async def load(self) -> None:
        """Read the stored verdicts once (later calls return at once)."""
        if self._loaded:
            return
        async with self._lock:
            if not self._loaded:
                try:
                    await self._read()
                finally:
                    self._loaded = True  # set last: layers loading side by side wait for it

    async def _read(self) -> None:
        try:  # reading never creates anything: without a key, nothing stored can be verified
            self._secret = bytes.fromhex((await self.filesystem.read_bytes(self.key_path)).decode("ascii").strip())
            raw = await self.filesystem.read_bytes(self.path)
        except FileNotFoundError:
            return
        except Exception as exc:  # an unreadable store costs rescans, never a turn
            log.warning("cannot read %s, market skills are rescanned: %s", self.path, exc)
            return
        records = self._verified(raw)
        if records is None:
            self.rejected = True
            log.warning("%s failed its integrity check; ignoring it, market skills are rescanned", self.path)
            return
        self._verdicts = {**records, **self._verdicts}

    async def save(self) -> None:
        """Write the verdicts if a scan added any: one atomic write of the whole file."""
        if not self._dirty:
            return
        async with self._lock:
            if not self._dirty:
                return
            self._dirty = False
            if len(self._verdicts) > _MAX_RECORDS:  # keep what this process used, then the rest
                keep = sorted(self._verdicts, key=lambda k: k not in self._used)[:_MAX_RECORDS]
                self._verdicts = {k: self._verdicts[k] for k in keep}
            try:
                secret = self._secret or await self._key()
                self._secret = secret
                await self._merge_stored()
                body = {"format": _FORMAT, "rules": self.scanner.version, "verdicts": self._verdicts}
                await self.filesystem.write_bytes(self.path, _signed(secret, body))
            except Exception as exc:
                log.warning("cannot save %s (market skills will be rescanned after a restart): %s", self.path, exc)

    async def _merge_stored(self) -> None:
        """Keep what another process sharing the workspace saved meanwhile (if it verifies)."""
        try:
            raw = await self.filesystem.read_bytes(self.path)
        except FileNotFoundError:
            return
        for key, record in (self._verified(raw) or {}).items():
            self._verdicts.setdefault(key, record)

    def _verified(self, raw: bytes) -> dict[str, dict[str, Any]] | None:
        """The records of ``raw`` when its MAC verifies and they are this scanner's, else ``None``
        (a file of other rules or an earlier format is not an integrity failure: an empty dict)."""
        if self._secret is None:
            return None
        signed = _split(raw)
        if signed is None:
            return {} if _earlier_format(raw) else None
        body, mac = signed
        import hmac  # the stored verdicts are read and written only once a market is scanned

        if not hmac.compare_digest(mac, _mac(self._secret, body).encode("ascii")):
            return None
        try:
            document = json.loads(body, object_hook=_shared_clean)
        except ValueError:
            return None
        if not isinstance(document, dict):
            return None
        verdicts = document.get("verdicts")
        if document.get("format") != _FORMAT or document.get("rules") != self.scanner.version:
            return {}
        if not isinstance(verdicts, dict):
            return None
        return {str(k): v for k, v in verdicts.items() if isinstance(v, dict)}

    async def _key(self) -> bytes:
        return await machine_key(self.filesystem, self.key_path)


_CLEAN = ScanVerdict(dangerous=False)
# The stored record of a file without findings: most records, read as this one shared object.
_CLEAN_RECORD: dict[str, Any] = _CLEAN.as_dict()


def _shared_clean(record: dict[str, Any]) -> dict[str, Any]:
    """A decoded JSON object, the shared clean record when it is one (``json.loads``' hook)."""
    return _CLEAN_RECORD if record == _CLEAN_RECORD and record["dangerous"] is False else record


def _combined(verdicts: list[ScanVerdict]) -> ScanVerdict:
    """``ScanVerdict.combined``; files without findings (most) share one verdict."""
    return _CLEAN if all(v is _CLEAN for v in verdicts) else ScanVerdict.combined(verdicts)


def _mac(secret: bytes, body: bytes) -> str:
    import hmac

    return hmac.new(secret, body, hashlib.sha256).hexdigest()


def _signed(secret: bytes, body: dict[str, Any]) -> bytes:
    """``body`` as compact JSON with sorted keys, its MAC appended as the last key."""
    encoded = json.dumps(body, sort_keys=True, separators=(",", ":")).encode("utf-8")
    return encoded[:-1] + _MAC_TAIL + _mac(secret, encoded).encode("ascii") + b'"}'


def _split(raw: bytes) -> tuple[bytes, bytes] | None:
    """The signed body of a document :func:`_signed` wrote and the MAC it ends with, else ``None``."""
    if len(raw) < _TAIL_LENGTH + 2 or not raw.endswith(b'"}') or not raw[-_TAIL_LENGTH:].startswith(_MAC_TAIL):
        return None
    mac = raw[-_TAIL_LENGTH + len(_MAC_TAIL) : -2]
    if mac.strip(b"0123456789abcdef"):
        return None
    return raw[:-_TAIL_LENGTH] + b"}", mac


def _earlier_format(raw: bytes) -> bool:
    """Whether ``raw`` is a store of an earlier format (its records are rescanned, quietly)."""
    try:
        document = json.loads(raw)
    except ValueError:
        return False
    return isinstance(document, dict) and isinstance(document.get("format"), int) and document["format"] < _FORMAT
