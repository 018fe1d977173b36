"""Skill packages that arrive as ZIP archives: the checks every market that unpacks one applies.

:class:`ZipPackage` opens an archive's bytes and checks it before anything is read:

- the end record's entry count and central-directory size are bounded (``max_entries``) before
  the directory is parsed, so a package cannot make the parser build millions of entries;
- two entries whose names mean one path — after folding ``\\`` to ``/``, dropping empty and
  ``.`` segments, Unicode NFC and case (``a/b``, ``a//b``, ``./a/b``, ``A/B``, and a name the
  ZIP reader cuts at a NUL) — refuse the **whole package**: which copy a reader would serve is
  up to the reader, so no copy is;
- the sizes the central directory declares are checked (each entry against ``max_file_size``,
  skipped past it; all of them against ``max_total_size``, refused past it);
- entries that are not clean relative paths, links and other non-regular entries, encrypted
  entries, and a file that is also a folder of another entry are skipped and reported.

:meth:`ZipPackage.read` then reads exactly the entry that was checked (never another entry of
the same name) and trusts no declared size: it decompresses at most the declared size plus one
byte, and refuses the package when the data is longer or shorter than declared.

Every refusal is an :class:`ArchiveRefused` whose message says why; a skipped entry is a line
of :attr:`ZipPackage.problems`.
"""

from __future__ import annotations

import io
import stat
import struct
import unicodedata
import zipfile
from dataclasses import dataclass

from filesystems.paths import relative_path_problem
from repositories.discovery import FILE, OTHER, SYMLINK, shown
from repositories.errors import InvalidBundle

__all__ = ["DEFAULT_MAX_ENTRIES", "ArchiveEntry", "ArchiveRefused", "ZipPackage", "path_key"]

#: The most entries a package may hold.
DEFAULT_MAX_ENTRIES = 4096

_END_RECORD = struct.Struct("<4s4H2LH")  # the ZIP end-of-central-directory record
_END_SIGNATURE = b"PK\x05\x06"
_ZIP64_LOCATOR = b"PK\x06\x07"  # precedes the end record of a ZIP64 archive
_ZIP64_LOCATOR_SIZE = 20
_DIRECTORY_ENTRY = 46  # the fixed part of one central-directory entry
_MAX_NAME = 1024  # directory bytes allowed per entry on top of the fixed part (name, extra, comment)


class ArchiveRefused(InvalidBundle):
    """A package that cannot be served as a whole (the reason is the message)."""


@dataclass(frozen=True, kw_only=True)
class ArchiveEntry:
    """A checked file entry: its path, declared size, permission bits and the exact ZIP member."""

    path: str
    size: int
    mode: int
    crc: int
    info: zipfile.ZipInfo


def path_key(path: str) -> str:
    """The path a ZIP entry name means once readers and filesystems have folded it."""
    parts = [part for part in path.replace("\\", "/").split("/") if part not in ("", ".")]
    return unicodedata.normalize("NFC", "/".join(parts)).casefold()


class ZipPackage:
    """An archive's bytes, opened and checked (see the module docstring); close it, or use it
    as a context manager. Raises :class:`ArchiveRefused` for a package that cannot be served."""

    def __init__(
        self, data: bytes, *, max_file_size: int, max_total_size: int, max_entries: int = DEFAULT_MAX_ENTRIES
    ) -> None:
        self.max_file_size = max_file_size
        self.max_total_size = max_total_size
        _check_end_record(data, max_entries)
        try:
            self._zip = zipfile.ZipFile(io.BytesIO(data))
        except (zipfile.BadZipFile, ValueError, EOFError) as exc:
            raise ArchiveRefused(f"not a ZIP archive: {exc}") from None
        try:
            self.entries, self.problems = self._check()
        except BaseException:
            self._zip.close()
            raise
        self._read = 0

    def __enter__(self) -> ZipPackage:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Release the archive (idempotent)."""
        self._zip.close()

    def _check(self) -> tuple[tuple[ArchiveEntry, ...], tuple[str, ...]]:
        infos = [info for info in self._zip.infolist() if not info.is_dir()]
        seen: dict[str, str] = {}
        for info in infos:
            key = path_key(info.filename)
            if key in seen:
                raise ArchiveRefused(
                    f"entries {shown(seen[key])} and {shown(info.filename)} name the same path: "
                    "a package must hold each path once"
                )
            seen[key] = info.filename
        declared = sum(info.file_size for info in infos)
        if declared > self.max_total_size:
            raise ArchiveRefused(f"it unpacks to {declared} bytes, more than {self.max_total_size}")
        problems: list[str] = []
        entries: list[ArchiveEntry] = []
        for info in infos:
            problem = _entry_problem(info, self.max_file_size)
            if problem:
                problems.append(f"entry {shown(info.filename)} skipped: {problem}")
                continue
            _, mode = _kind_and_mode(info)
            entries.append(ArchiveEntry(path=info.filename, size=info.file_size, mode=mode, crc=info.CRC, info=info))
        paths = {entry.path for entry in entries}
        folders = {"/".join(p.split("/")[:i]) for p in paths for i in range(1, p.count("/") + 1)}
        for path in sorted(paths & folders):
            problems.append(f"entry {shown(path)} skipped: a folder of the same name exists")
        return tuple(e for e in entries if e.path not in folders), tuple(problems)

    def read(self, entry: ArchiveEntry) -> bytes:
        """The bytes of ``entry`` (one of :attr:`entries`), decompressed no further than its
        declared size allows; :class:`ArchiveRefused` when they do not match what it declares
        or the archive is damaged."""
        try:
            with self._zip.open(entry.info) as stream:
                data = stream.read(entry.size + 1)
        except (zipfile.BadZipFile, OSError, EOFError, RuntimeError, ValueError) as exc:
            raise ArchiveRefused(f"cannot unpack {shown(entry.path)}: {exc}") from None
        if len(data) != entry.size:
            raise ArchiveRefused(
                f"entry {shown(entry.path)} declares {entry.size} bytes but holds "
                f"{'more' if len(data) > entry.size else len(data)}"
            )
        self._read += len(data)
        if self._read > self.max_total_size:  # declared sizes were checked; this holds even if reads repeat
            raise ArchiveRefused(f"it unpacks to more than {self.max_total_size} bytes")
        return data


def _check_end_record(data: bytes, max_entries: int) -> None:
    """Refuse an archive whose end record announces more than ``max_entries`` entries (or a
    directory too large for them, or ZIP64) before the ZIP reader parses the directory."""
    at = data.rfind(_END_SIGNATURE, max(0, len(data) - _END_RECORD.size - 0xFFFF))
    if at == -1 or len(data) - at < _END_RECORD.size:
        raise ArchiveRefused("not a ZIP archive: no end of central directory record")
    _, _, _, _, count, directory_size, _, _ = _END_RECORD.unpack_from(data, at)
    zip64 = data[max(0, at - _ZIP64_LOCATOR_SIZE) : at].startswith(_ZIP64_LOCATOR)
    if zip64 or count == 0xFFFF or directory_size == 0xFFFFFFFF:
        raise ArchiveRefused("it is a ZIP64 archive, larger than a skill package may be")
    if count > max_entries or directory_size > max_entries * (_DIRECTORY_ENTRY + _MAX_NAME):
        raise ArchiveRefused(f"it holds more than {max_entries} entries")


def _entry_problem(info: zipfile.ZipInfo, max_file_size: int) -> str | None:
    """Why a file entry is skipped, or ``None``."""
    problem = relative_path_problem(info.filename)
    if problem:
        return problem
    kind, _ = _kind_and_mode(info)
    if kind != FILE:
        return "a symlink" if kind == SYMLINK else "not a regular file"
    if info.flag_bits & 0x1:
        return "it is encrypted"
    if info.file_size > max_file_size:
        return f"{info.file_size} bytes, over the {max_file_size}-byte limit"
    return None


def _kind_and_mode(info: zipfile.ZipInfo) -> tuple[str, int]:
    """What an entry is (file, symlink, other) and its permission bits.

    Unix ZIP tools keep ``st_mode`` in the high bits of ``external_attr``; archives written
    elsewhere carry none, and their files are plain ``0644`` files.
    """
    unix = info.external_attr >> 16 if info.create_system == 3 else 0
    kind = stat.S_IFMT(unix)
    if stat.S_ISLNK(unix):
        return SYMLINK, 0
    if kind not in (0, stat.S_IFREG):
        return OTHER, 0
    return FILE, (unix & 0o777) or 0o644
