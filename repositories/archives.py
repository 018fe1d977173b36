"""Skill packages that arrive as archives (ZIP, or gzip-compressed tar): the checks every market
that unpacks one applies.

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

:class:`TarPackage` applies the same rules to a ``.tar.gz`` (or plain ``.tar``) package: the
decompressed stream is cut off past ``max_total_size`` plus a bounded allowance for headers,
the member count is bounded while the headers are read, two members naming one path refuse the
package, and links (symbolic or hard), devices and other non-regular members are skipped and
reported. :func:`open_package` picks the reader from the bytes themselves.

Both take ``hidden``, a market's own rule for entries it does not serve on top of these (the
well-known market's dot-files, :func:`dot_files`): such an entry is skipped like the others.
Version-control metadata (``.git/…``) is never a clean relative path, so every package skips it. Every refusal is an :class:`ArchiveRefused` whose message says why; a skipped entry
is a line of the package's ``problems`` naming its path, for the first :data:`MAX_NAMED_SKIPS`
of them, and one more line counts the rest by reason, so a crafted archive cannot flood them.
"""

from __future__ import annotations

import gzip
import io
import stat
import struct
import tarfile
import unicodedata
import zipfile
import zlib
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Self

from filesystems.paths import relative_path_problem
from repositories.discovery import FILE, OTHER, SYMLINK, shown
from repositories.errors import InvalidBundle

__all__ = [
    "DEFAULT_MAX_ENTRIES",
    "MAX_NAMED_SKIPS",
    "ArchiveEntry",
    "ArchiveRefused",
    "Package",
    "TarPackage",
    "ZipPackage",
    "dot_files",
    "open_package",
    "path_key",
]

#: The most entries a package may hold.
DEFAULT_MAX_ENTRIES = 4096
#: Skipped entries a package's problems name one by one; the rest are counted.
MAX_NAMED_SKIPS = 20

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
    info: zipfile.ZipInfo | tarfile.TarInfo


def _serve_all(path: str) -> str | None:
    return None


def dot_files(path: str) -> str | None:
    """``hidden`` for a market that serves no dot-file: why ``path`` (``.env``, ``a/.DS_Store``,
    ``.git/config``) is not served, or ``None``."""
    if any(part.startswith(".") for part in path.split("/")):
        return "a dot-file (dot-files are not served)"
    return None


class _Skips:
    """The entries a package skipped: each named with its reason up to :data:`MAX_NAMED_SKIPS`,
    the rest counted by reason."""

    def __init__(self) -> None:
        self._named: list[str] = []
        self._rest: Counter[str] = Counter()

    def add(self, path: str, reason: str) -> None:
        if len(self._named) < MAX_NAMED_SKIPS:
            self._named.append(f"entry {shown(path)} skipped: {reason}")
        else:
            self._rest[reason] += 1

    def problems(self) -> tuple[str, ...]:
        if not self._rest:
            return tuple(self._named)
        counted = "; ".join(f"{count} {reason}" for reason, count in sorted(self._rest.items()))
        more = f"{sum(self._rest.values())} more entries skipped, not named ({counted})"
        return (*self._named, more)


def path_key(path: str) -> str:
    """The path a ZIP entry name means once readers and filesystems have folded it."""
    parts = [part for part in path.replace("\\", "/").split("/") if part not in ("", ".")]
    return unicodedata.normalize("NFC", "/".join(parts)).casefold()


class _CheckedPackage(ABC):
    """An archive's bytes, opened and checked (see the module docstring); close it, or use it
    as a context manager. ``hidden`` gives the reason the market does not serve a path the
    checks passed, or ``None``. Raises :class:`ArchiveRefused` for a package that cannot be served.

    ``entries`` are the checked file entries, ``problems`` the entries skipped and why."""

    entries: tuple[ArchiveEntry, ...]
    problems: tuple[str, ...]

    def __init__(
        self,
        data: bytes,
        *,
        max_file_size: int,
        max_total_size: int,
        max_entries: int = DEFAULT_MAX_ENTRIES,
        hidden: Callable[[str], str | None] = _serve_all,
    ) -> None:
        self.max_file_size = max_file_size
        self.max_total_size = max_total_size
        self.hidden = hidden
        self.entries, self.problems = self._open(data, max_entries)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @abstractmethod
    def _open(self, data: bytes, max_entries: int) -> tuple[tuple[ArchiveEntry, ...], tuple[str, ...]]:
        """Open ``data`` and check it: the entries and the problems."""

    @abstractmethod
    def close(self) -> None:
        """Release the archive (idempotent)."""

    @abstractmethod
    def read(self, entry: ArchiveEntry) -> bytes:
        """The bytes of ``entry`` (one of :attr:`entries`)."""


class ZipPackage(_CheckedPackage):
    """A ZIP package (see :class:`_CheckedPackage` and the module docstring)."""

    def _open(self, data: bytes, max_entries: int) -> tuple[tuple[ArchiveEntry, ...], tuple[str, ...]]:
        _check_end_record(data, max_entries)
        try:
            self._zip = zipfile.ZipFile(io.BytesIO(data))
        except (zipfile.BadZipFile, ValueError, EOFError) as exc:
            raise ArchiveRefused(f"not a ZIP archive: {exc}") from None
        self._read = 0
        try:
            return self._check()
        except BaseException:
            self._zip.close()
            raise

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
        skips = _Skips()
        entries: list[ArchiveEntry] = []
        for info in infos:
            problem = _entry_problem(info, self.max_file_size) or self.hidden(info.filename)
            if problem:
                skips.add(info.filename, problem)
                continue
            _, mode = _kind_and_mode(info)
            entries.append(ArchiveEntry(path=info.filename, size=info.file_size, mode=mode, crc=info.CRC, info=info))
        return _without_folders(entries, skips), skips.problems()

    def read(self, entry: ArchiveEntry) -> bytes:
        """The bytes of ``entry`` (one of :attr:`entries`), decompressed no further than its
        declared size allows; :class:`ArchiveRefused` when they do not match what it declares
        or the archive is damaged."""
        assert isinstance(entry.info, zipfile.ZipInfo)  # one of this package's entries
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


_TAR_HEADER_ALLOWANCE = 3 * 1024  # bytes of headers (a long name takes extra blocks) allowed per member
_GZIP_MAGIC = b"\x1f\x8b"


class TarPackage(_CheckedPackage):
    """A ``.tar.gz`` (or ``.tar``) package, checked with the rules of :class:`ZipPackage` (see
    :class:`_CheckedPackage` and the module docstring)."""

    _data: dict[str, bytes]

    def _open(self, data: bytes, max_entries: int) -> tuple[tuple[ArchiveEntry, ...], tuple[str, ...]]:
        raw = _gunzip(data, self.max_total_size + max_entries * _TAR_HEADER_ALLOWANCE + 1024)
        self._data = {}
        try:
            with tarfile.open(fileobj=io.BytesIO(raw), mode="r:") as tar:
                return self._check(tar, max_entries)
        except tarfile.TarError as exc:
            raise ArchiveRefused(f"not a tar archive: {exc}") from None

    def close(self) -> None:
        """Release the unpacked bytes (idempotent)."""
        self._data = {}

    def _check(self, tar: tarfile.TarFile, max_entries: int) -> tuple[tuple[ArchiveEntry, ...], tuple[str, ...]]:
        members: list[tarfile.TarInfo] = []
        seen: dict[str, str] = {}
        declared = 0
        while (member := tar.next()) is not None:
            if len(members) >= max_entries:
                raise ArchiveRefused(f"it holds more than {max_entries} entries")
            members.append(member)
            if member.isdir():
                continue
            key = path_key(member.name)
            if key in seen:
                raise ArchiveRefused(
                    f"entries {shown(seen[key])} and {shown(member.name)} name the same path: "
                    "a package must hold each path once"
                )
            seen[key] = member.name
            declared += member.size if member.isfile() else 0
            if declared > self.max_total_size:
                raise ArchiveRefused(f"it unpacks to {declared} bytes, more than {self.max_total_size}")
        skips = _Skips()
        entries: list[ArchiveEntry] = []
        for member in members:
            if member.isdir():
                continue
            name = _tar_name(member.name)
            problem = relative_path_problem(name)
            if problem is None and not member.isfile():
                problem = "a link" if member.issym() or member.islnk() else "not a regular file"
            if problem is None and member.size > self.max_file_size:
                problem = f"{member.size} bytes, over the {self.max_file_size}-byte limit"
            problem = problem or self.hidden(name)
            if problem:
                skips.add(member.name, problem)
                continue
            stream = tar.extractfile(member)
            data = stream.read(member.size + 1) if stream is not None else b""
            if len(data) != member.size:
                raise ArchiveRefused(f"entry {shown(member.name)} declares {member.size} bytes but holds {len(data)}")
            self._data[name] = data
            mode = (member.mode & 0o777) or 0o644
            entries.append(ArchiveEntry(path=name, size=member.size, mode=mode, crc=zlib.crc32(data), info=member))
        return _without_folders(entries, skips), skips.problems()

    def read(self, entry: ArchiveEntry) -> bytes:
        """The bytes of ``entry`` (one of :attr:`entries`)."""
        try:
            return self._data[entry.path]
        except KeyError:
            raise ArchiveRefused(f"no entry {shown(entry.path)} in the package") from None


def _without_folders(entries: list[ArchiveEntry], skips: _Skips) -> tuple[ArchiveEntry, ...]:
    """``entries`` but a file that is also a folder of another entry (skipped and reported)."""
    paths = {entry.path for entry in entries}
    folders = {"/".join(p.split("/")[:i]) for p in paths for i in range(1, p.count("/") + 1)}
    for path in sorted(paths & folders):
        skips.add(path, "a folder of the same name exists")
    return tuple(e for e in entries if e.path not in folders)


def _tar_name(name: str) -> str:
    """A member name without the ``./`` prefix ``tar -C folder .`` writes."""
    while name.startswith("./") and len(name) > 2:
        name = name[2:]
    return name


def _gunzip(data: bytes, limit: int) -> bytes:
    """``data`` decompressed when it is gzip (else as it is), refused past ``limit`` bytes."""
    if not data.startswith(_GZIP_MAGIC):
        if len(data) > limit:
            raise ArchiveRefused(f"it unpacks to more than {limit} bytes")
        return data
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as stream:
            raw = stream.read(limit + 1)
    except (OSError, EOFError, zlib.error) as exc:
        raise ArchiveRefused(f"not a gzip stream: {exc}") from None
    if len(raw) > limit:
        raise ArchiveRefused(f"it unpacks to more than {limit} bytes")
    return raw


Package = ZipPackage | TarPackage
"""A checked package of either kind."""


def open_package(
    data: bytes,
    *,
    max_file_size: int,
    max_total_size: int,
    max_entries: int = DEFAULT_MAX_ENTRIES,
    hidden: Callable[[str], str | None] = _serve_all,
) -> Package:
    """The checked package ``data`` holds: a ZIP archive, or a (gzip-compressed) tar archive,
    told apart by their bytes (``hidden`` as the package classes take it). Raises :class:`ArchiveRefused`."""
    kind = ZipPackage if data.startswith(b"PK") else TarPackage
    return kind(
        data, max_file_size=max_file_size, max_total_size=max_total_size, max_entries=max_entries, hidden=hidden
    )
