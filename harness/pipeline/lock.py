"""Pinning skills: the lockfile (``harness.lock``) and how a locked pipeline serves markets.

A lockfile records, for every market (by its slug), what kind of market it is, where it is
(credentials masked), its exact version — the commit of a git market, and for every market a
content hash over its skills — and every served skill's digest. A skill's digest is
``sha256:`` over its files' paths and bytes (``SKILL.md`` included, modes left out, so one
checkout reads the same on every machine): it names the content whatever market served it. A
skill of a market that serves files only on use and verifies each one against its listing (an
MCP server's listed skill, ``SkillBundle.on_demand``) is identified by its listing instead, so
that locking it and serving it under the lock read none of its files: its digest is ``sha256:``
over the market's digest of its listed files (every ``{uri, digest}``, ``SKILL.md``'s included)
and the listed frontmatter the catalog shows until the skill is used
(:func:`listing_digest`). A file that does not match its listed digest is refused when it is
fetched, so a server that lies is caught there. A dynamic skill (an MCP server's
``"resources": "dynamic"``, made afresh on each read) has no digest: it is recorded as
``"dynamic": true`` and nothing of it is read.

With a lock in force (:class:`SkillPipeline(lock=...) <harness.pipeline.SkillPipeline>`,
``lock:`` in ``harness.yaml``, ``--locked`` on the CLI) the pipeline serves exactly the locked
content: a git market is pinned to its locked commit (:meth:`GitRepository.pin
<repositories.GitRepository.pin>`), so a branch that moved or was force-pushed changes
nothing; every other market's skills are compared with their locked digests, and a skill that
drifted, one the lock does not know, or a market the lock does not know, is **not served**,
with a ``lock-drift`` error naming the market, the skill and both digests. A locked skill gone
from its market is a ``lock-drift`` error too. A skill the lock records as dynamic cannot be
pinned: it is served as it comes, with a ``lock-dynamic`` warning on every turn (its files are
still scanned on every read, never verified, staged or run); one locked with a digest that turned
dynamic, or the reverse, has drifted. ``harness skills update [MARKET]`` moves the lock.

The lockfile is checked whole when it is read, and refused (:class:`LockError`, naming the entry
and the problem) unless every field is what the format defines: no unknown field, no key given
twice, market slugs, skill folder paths without ``..``, absolute, backslash or control-character
segments, ``sha256:`` digests, full commit ids, at most :data:`MAX_LOCKFILE_SIZE` bytes. A
well-formed lock that disagrees with the configuration is reported per turn instead: a market
whose configured kind or location is not the locked one (the lock was written for another
source) pins nothing and serves none of its skills, and a locked market that is not configured
is named; both are ``lock-drift`` errors.

The project lockfile of the ``skills`` CLI (``skills-lock.json``: ``{"version": 1, "skills":
{name: {"source", "sourceType", "computedHash", ...}}}``) is read beside ``harness.lock``: a
skill of that name in the global folder, a market or the workspace is served only while its
files hash to its ``computedHash`` (that CLI's hash: SHA-256 over each file's relative path
then bytes, in path order).

The file is JSON, keys sorted, two-space indent, one trailing newline, so that two locks of the
same content are the same bytes and a change is a small diff::

    {
      "lockfileVersion": 1,
      "markets": {
        "git-acme-skills": {
          "commit": "3f6c...",
          "kind": "git",
          "location": "https://github.com/acme/skills.git",
          "skills": {
            "code-review": {"digest": "sha256:9b1e...", "name": "code-review"}
          },
          "version": "sha256:77a0..."
        }
      }
    }
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from filesystems.paths import has_control
from harness.diagnostics import Diagnostic
from harness.errors import HarnessError
from repositories import GitRepository, InvalidBundle, InvalidRepositoryConfig, SkillBundle, SkillRepository
from repositories.discovery import check_folder
from repositories.sources import check_source

__all__ = [
    "DYNAMIC",
    "LOCKFILE_NAME",
    "LOCKFILE_VERSION",
    "MAX_LOCKFILE_SIZE",
    "SKILLS_LOCK_NAME",
    "LayerPins",
    "LockChange",
    "LockError",
    "LockedMarket",
    "LockedSkill",
    "Lockfile",
    "by_listing",
    "content_digest",
    "diff_locks",
    "listing_digest",
    "lock_market",
    "read_bundle_files",
    "read_skills_lock",
    "skills_cli_hashes",
    "unconfigured",
]

LOCKFILE_NAME = "harness.lock"
"""The lockfile's name, beside ``harness.yaml``."""
LOCKFILE_VERSION = 1
SKILLS_LOCK_NAME = "skills-lock.json"
"""The project lockfile the ``skills`` CLI writes."""
MAX_LOCKFILE_SIZE = 16 * 1024 * 1024
"""The largest lockfile (or ``skills-lock.json``) read, in bytes: a lock of 10,000 skills is
about 1.5 MB. A larger file is refused unread."""

_SHA256 = re.compile(r"sha256:[0-9a-f]{64}")
_COMMIT = re.compile(r"[0-9a-f]{40}")
_MAX_TEXT = 4096  # characters of a location or a skill name


class LockError(HarnessError):
    """A lockfile that cannot be read or written (the message names the file and the problem)."""


#: How messages and diffs show a dynamic skill's missing digest.
DYNAMIC = "dynamic"


@dataclass(frozen=True, kw_only=True)
class LockedSkill:
    """One skill of a locked market: its name and content digest (``sha256:<hex>``), ``None``
    for a dynamic skill (its server makes it afresh on each read: there is nothing to pin)."""

    name: str
    digest: str | None

    @property
    def dynamic(self) -> bool:
        """Whether the lock recorded the skill as dynamic."""
        return self.digest is None

    @property
    def shown(self) -> str:
        """The digest as messages show it (``dynamic`` for a dynamic skill)."""
        return self.digest or DYNAMIC


@dataclass(frozen=True, kw_only=True)
class LockedMarket:
    """One market as locked: its kind, location, version (content hash), commit (git) and skills
    by folder."""

    kind: str
    location: str
    version: str
    skills: Mapping[str, LockedSkill]
    commit: str | None = None


@dataclass(frozen=True, kw_only=True)
class Lockfile:
    """A whole lock: the markets by slug, and the ``skills`` CLI's pins (name → computedHash)."""

    markets: Mapping[str, LockedMarket] = field(default_factory=dict)
    pins: Mapping[str, str] = field(default_factory=dict)

    def dumps(self) -> str:
        """The lock as its file's text (stable: see the module docstring)."""
        markets = {
            slug: {
                "kind": market.kind,
                "location": market.location,
                "version": market.version,
                **({"commit": market.commit} if market.commit else {}),
                "skills": {key: _skill_record(s) for key, s in market.skills.items()},
            }
            for slug, market in self.markets.items()
        }
        return json.dumps({"lockfileVersion": LOCKFILE_VERSION, "markets": markets}, indent=2, sort_keys=True) + "\n"

    @classmethod
    def loads(cls, text: str, *, where: str = LOCKFILE_NAME) -> Lockfile:
        """A lock from its file's text; :class:`LockError` naming ``where``, the entry and the
        problem when it is not a well-formed lockfile (see :func:`_parse_lock`)."""
        try:
            return cls(markets=_parse_lock(_load_json(text)))
        except _Malformed as exc:
            raise LockError(f"{where}: not a harness lockfile: {exc}") from None

    @classmethod
    def read(cls, path: str | os.PathLike[str], *, skills_lock: bool = True) -> Lockfile:
        """The lock at ``path`` plus the pins of a ``skills-lock.json`` beside it (when
        ``skills_lock``); :class:`LockError` when ``path`` is missing or broken."""
        path = Path(path)
        text = _read_text(path, "the lockfile")
        if text is None:
            raise LockError(f"{path}: cannot read the lockfile (no such file); write one with `harness skills lock`")
        lock = cls.loads(text, where=str(path))
        pins = read_skills_lock(path.parent / SKILLS_LOCK_NAME) if skills_lock else {}
        return Lockfile(markets=lock.markets, pins=pins)

    def write(self, path: str | os.PathLike[str]) -> None:
        """Write the lock to ``path`` atomically (a temporary file renamed over it)."""
        path = Path(path)
        temporary = path.with_name(f".{path.name}.tmp")
        try:
            temporary.write_text(self.dumps(), encoding="utf-8")
            os.replace(temporary, path)
        except OSError as exc:
            raise LockError(f"{path}: cannot write the lockfile: {exc.strerror or exc}") from None


def read_skills_lock(path: str | os.PathLike[str]) -> dict[str, str]:
    """The pins (skill name → ``computedHash``) of a ``skills`` CLI project lockfile; ``{}``
    when there is none. :class:`LockError` when it exists but is not one."""
    path = Path(path)
    text = _read_text(path, SKILLS_LOCK_NAME)
    if text is None:
        return {}
    try:
        data = _load_json(text)
        skills = data["skills"]  # type: ignore[index]
        return {str(name): str(entry["computedHash"]) for name, entry in skills.items() if entry.get("computedHash")}
    except (_Malformed, KeyError, TypeError, AttributeError) as exc:
        raise LockError(f"{path}: not a skills-lock.json: {exc}") from None


def _read_text(path: Path, what: str) -> str | None:
    """The text of a lockfile, read no further than :data:`MAX_LOCKFILE_SIZE` (``None`` when
    there is no such file); :class:`LockError` when it cannot be read, is larger or is not UTF-8."""
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_LOCKFILE_SIZE + 1)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise LockError(f"{path}: cannot read {what} ({exc.strerror or exc})") from None
    if len(data) > MAX_LOCKFILE_SIZE:
        raise LockError(f"{path}: {what} is larger than {MAX_LOCKFILE_SIZE} bytes: refused unread")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise LockError(f"{path}: {what} is not JSON: not UTF-8 text ({exc.reason} at byte {exc.start})") from None


class _Malformed(ValueError):
    """A lockfile that is not well formed (the message names the entry and the problem)."""


def _load_json(text: str) -> object:
    """``text`` as JSON, refusing text over :data:`MAX_LOCKFILE_SIZE`, a key given twice in
    one object (which copy counts would be up to the reader) and nesting too deep to parse."""
    if len(text) > MAX_LOCKFILE_SIZE:
        raise _Malformed(f"larger than {MAX_LOCKFILE_SIZE} bytes")
    try:
        return json.loads(text, object_pairs_hook=_unique_keys)
    except RecursionError:
        raise _Malformed("not JSON: nested too deeply") from None
    except _Malformed:
        raise
    except ValueError as exc:
        raise _Malformed(f"not JSON: {exc}") from None


def _unique_keys(pairs: list[tuple[str, object]]) -> dict[str, object]:
    data: dict[str, object] = {}
    for key, value in pairs:
        if key in data:
            raise _Malformed(f"{key!r} given twice in one object")
        data[key] = value
    return data


def _record(
    data: object, what: str, required: frozenset[str], optional: frozenset[str] = frozenset()
) -> dict[str, Any]:
    """``data`` as an object holding every ``required`` field and no field but ``optional`` ones."""
    if not isinstance(data, dict):
        raise _Malformed(f"{what}: not an object")
    unknown = sorted(set(data) - required - optional)
    if unknown:
        raise _Malformed(f"{what}: unknown field {unknown[0]!r}")
    absent = sorted(required - set(data))
    if absent:
        raise _Malformed(f"{what}: no {absent[0]!r}")
    return data


def _text(value: object, what: str, pattern: re.Pattern[str] | None = None, shape: str = "") -> str:
    """``value`` as a string that matches ``pattern`` (else one of text without control characters)."""
    if not isinstance(value, str) or not value or len(value) > _MAX_TEXT or (pattern and not pattern.fullmatch(value)):
        raise _Malformed(f"{what} {_shown(value)} is not {shape or 'text'}")
    if pattern is None and has_control(value):
        raise _Malformed(f"{what} {_shown(value)} holds control characters")
    return value


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _parse_lock(data: object) -> dict[str, LockedMarket]:
    """The markets of a lockfile's JSON data, every field checked: market slugs, skill folder
    paths (no ``..``, absolute, backslash or control-character segment), ``sha256:`` digests,
    full commit ids, and no field the lockfile does not define."""
    top = _record(data, "the file", frozenset({"lockfileVersion", "markets"}))
    if top["lockfileVersion"] != LOCKFILE_VERSION:
        raise _Malformed(f"lockfileVersion {_shown(top['lockfileVersion'])} is not {LOCKFILE_VERSION}")
    if not isinstance(top["markets"], dict):
        raise _Malformed("markets: not an object")
    markets: dict[str, LockedMarket] = {}
    for slug, entry in top["markets"].items():
        what = f"market {_shown(slug)}"
        try:
            check_source(slug)
        except InvalidRepositoryConfig:
            raise _Malformed(f"{what}: not a market slug (lowercase letters, digits, '.', '_', '-')") from None
        market = _record(entry, what, frozenset({"kind", "location", "version", "skills"}), frozenset({"commit"}))
        if not isinstance(market["skills"], dict):
            raise _Malformed(f"{what}: skills: not an object")
        commit = market.get("commit")
        markets[slug] = LockedMarket(
            kind=_text(market["kind"], f"{what}: kind"),
            location=_text(market["location"], f"{what}: location"),
            version=_text(market["version"], f"{what}: version", _SHA256, "sha256:<64 lowercase hex>"),
            commit=None if commit is None else _text(commit, f"{what}: commit", _COMMIT, "a full commit id"),
            skills={key: _locked_skill(key, skill, what) for key, skill in market["skills"].items()},
        )
    return markets


def _locked_skill(key: str, data: object, market: str) -> LockedSkill:
    what = f"{market}: skill {_shown(key)}"
    if not key or any(_unsafe_folder(part) for part in key.split("/")):
        raise _Malformed(f"{what}: not a skill folder path (safe folder names joined by '/')")
    skill = _record(data, what, frozenset({"name"}), frozenset({"digest", "dynamic"}))
    name = _text(skill["name"], f"{what}: name")
    if "dynamic" in skill:
        if skill["dynamic"] is not True or "digest" in skill:
            raise _Malformed(f"{what}: dynamic must be true, and a dynamic skill has no digest")
        return LockedSkill(name=name, digest=None)
    if "digest" not in skill:
        raise _Malformed(f"{what}: no 'digest'")
    return LockedSkill(
        name=name, digest=_text(skill["digest"], f"{what}: digest", _SHA256, "sha256:<64 lowercase hex>")
    )


def _unsafe_folder(part: str) -> bool:
    try:
        check_folder(part)
    except InvalidBundle:
        return True
    return False


def content_digest(files: Mapping[str, bytes]) -> str:
    """``sha256:`` over every file's path and the SHA-256 of its bytes, in path order."""
    digest = hashlib.sha256()
    for path in sorted(files):
        digest.update(f"{path}\0{hashlib.sha256(files[path]).hexdigest()}\n".encode())
    return "sha256:" + digest.hexdigest()


def listing_digest(digest: str, stand_in: bytes) -> str:
    """The digest of an on-demand skill that needs none of its files: ``sha256:`` over the
    market's ``digest`` of its listed files and the SHA-256 of the ``stand_in`` main file the
    catalog is built from (its listed frontmatter). Any file the listing changes, ``SKILL.md``
    included, and any listed frontmatter field change it."""
    text = f"{digest}\0{hashlib.sha256(stand_in).hexdigest()}\n"
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


class _Served(Protocol):
    """What :func:`by_listing` asks of a bundle or a layer entry."""

    @property
    def on_demand(self) -> bool: ...
    @property
    def listed(self) -> bool: ...
    @property
    def dynamic(self) -> bool: ...


def by_listing(skill: _Served) -> bool:
    """Whether the lock names ``skill`` (a bundle or a layer entry) by its listing
    (:func:`listing_digest`), reading nothing: a skill of an on-demand market that lists every
    file's digest and verifies each file against it on fetch."""
    return skill.on_demand and skill.listed and not skill.dynamic


def skills_cli_hashes(files: Mapping[str, bytes]) -> frozenset[str]:
    """The ``skills`` CLI's ``computedHash`` of a folder: SHA-256 over each file's relative
    path then its bytes, in path order. That CLI orders paths the way its locale compares
    them; for the plain ASCII names skills use that is byte order or case-folded order, so
    both are given."""
    hashes = set()
    for order in (sorted(files), sorted(files, key=lambda p: (p.casefold(), p))):
        digest = hashlib.sha256()
        for path in order:
            digest.update(path.encode())
            digest.update(files[path])
        hashes.add(digest.hexdigest())
    return frozenset(hashes)


async def read_bundle_files(repository: SkillRepository, bundles: Sequence[SkillBundle]) -> dict[str, dict[str, bytes]]:
    """Every file of each bundle (its main file included: an on-demand market's real one, not
    its stand-in), by bundle key, read in one batch; dynamic bundles are left out, unread (their
    content changes on every read). Raises what the repository raises for a bundle that cannot
    be read."""
    bundles = [bundle for bundle in bundles if not bundle.dynamic]
    requests = []
    for bundle in bundles:
        files = bundle.files if bundle.listed else (await repository.list_files(bundle.key)).files
        main = [bundle.skill_md_name] if bundle.on_demand else []
        requests.append((bundle.key, [*main, *(f.path for f in files)]))
    answers = await repository.read_files_batch(requests)
    read: dict[str, dict[str, bytes]] = {}
    for bundle, answer in zip(bundles, answers, strict=True):
        if isinstance(answer, Exception):
            raise answer
        read[bundle.key] = {bundle.skill_md_name: bundle.skill_md, **answer}
    return read


async def lock_market(
    repository: SkillRepository, *, source: str, names: Mapping[str, str] | None = None
) -> LockedMarket:
    """``repository`` as it serves now, locked. ``names`` maps folder keys to skill names
    (default: the folder). A dynamic skill is recorded as such, and a skill named by its listing
    (:func:`by_listing`) by its listing digest, both unread. Raises when the market cannot be
    read whole."""
    snapshot = await repository.snapshot()
    if snapshot.error is not None:
        raise snapshot.error
    files = await read_bundle_files(repository, [b for b in snapshot.bundles if not by_listing(b)])
    skills = {
        bundle.key: LockedSkill(
            name=(names or {}).get(bundle.key, bundle.folder),
            digest=None if bundle.dynamic else _digest(bundle, files.get(bundle.key)),
        )
        for bundle in snapshot.bundles
    }
    version = hashlib.sha256("".join(f"{k}\0{s.shown}\n" for k, s in sorted(skills.items())).encode())
    return LockedMarket(
        kind=_kind(repository),
        location=_location(repository),
        version="sha256:" + version.hexdigest(),
        commit=snapshot.version if isinstance(repository, GitRepository) else None,
        skills=skills,
    )


def _digest(bundle: SkillBundle, files: Mapping[str, bytes] | None) -> str | None:
    """A bundle's digest as the lock records it: its listing digest when :func:`by_listing`,
    else its files' :func:`content_digest` (``None`` when they could not be read)."""
    if by_listing(bundle):
        return listing_digest(bundle.digest, bundle.skill_md)
    return content_digest(files) if files is not None else None


def _skill_record(skill: LockedSkill) -> dict[str, object]:
    """One skill as the lockfile writes it: its digest, or ``"dynamic": true`` instead."""
    return {"name": skill.name, **({"dynamic": True} if skill.digest is None else {"digest": skill.digest})}


def _location(repository: SkillRepository) -> str:
    """Where the market is, as the lock records it: its URL (credentials masked), its folder, or
    its slug."""
    return str(getattr(repository, "shown_url", None) or getattr(repository, "where", None) or repository.source)


def _kind(repository: SkillRepository) -> str:
    name = type(repository).__name__.removesuffix("Repository")
    return {"MySQL": "mysql", "WellKnown": "well-known", "PluginMarketplace": "plugin-marketplace"}.get(
        name, name.lower()
    )


@dataclass(frozen=True, kw_only=True)
class LockChange:
    """One difference between two locks: a skill ``added``, ``removed`` or ``changed``."""

    market: str
    skill: str
    change: str
    old: str | None = None
    new: str | None = None

    def __str__(self) -> str:
        if self.change == "added":
            return f"+ {self.market}/{self.skill} {self.new}"
        if self.change == "removed":
            return f"- {self.market}/{self.skill} {self.old}"
        return f"~ {self.market}/{self.skill} {self.old} -> {self.new}"


def diff_locks(old: Lockfile, new: Lockfile) -> list[LockChange]:
    """What moving from ``old`` to ``new`` changes, skill by skill, sorted by market and skill."""
    changes: list[LockChange] = []
    for slug in sorted({*old.markets, *new.markets}):
        before = old.markets[slug].skills if slug in old.markets else {}
        after = new.markets[slug].skills if slug in new.markets else {}
        for key in sorted({*before, *after}):
            was, now = before.get(key), after.get(key)
            if was is None and now is not None:
                changes.append(LockChange(market=slug, skill=key, change="added", new=now.shown))
            elif now is None and was is not None:
                changes.append(LockChange(market=slug, skill=key, change="removed", old=was.shown))
            elif was is not None and now is not None and was.digest != now.digest:
                changes.append(LockChange(market=slug, skill=key, change="changed", old=was.shown, new=now.shown))
    return changes


def unconfigured(lock: Lockfile, sources: Iterable[str]) -> list[Diagnostic]:
    """A ``lock-drift`` error for each market of ``lock`` that is not among the configured
    ``sources``: the lock and the configuration disagree, and nothing of that entry is served."""
    configured = set(sources)
    return [
        Diagnostic.error(
            code="lock-drift",
            message=(
                f"lock: market {slug!r} ({market.kind} at {market.location!r}) is in the lock but not configured: "
                "nothing is served from it (run `harness skills lock` to write a lock of the configured markets)"
            ),
            location=slug,
        )
        for slug, market in sorted(lock.markets.items())
        if slug not in configured
    ]


class LayerPins:
    """What a lock says about one layer's skills: the locked market (``None`` for a market the
    lock does not know; unused for a folder layer) and the ``skills`` CLI's pins by name.
    ``repository`` is the market as configured: a locked market of another kind or location
    (the lock was written for another source) pins nothing and serves none of its skills."""

    def __init__(
        self,
        *,
        source: str,
        market: LockedMarket | None,
        is_market: bool,
        pins: Mapping[str, str],
        repository: SkillRepository | None = None,
    ) -> None:
        self.source = source
        self.market = market
        self.is_market = is_market
        self.pins = dict(pins)
        self._elsewhere = _elsewhere(market, repository) if is_market and market and repository else None

    @property
    def commit(self) -> str | None:
        """The commit a git market is pinned to: the locked one, unless the lock was written for
        another source."""
        return self.market.commit if self.market is not None and self._elsewhere is None else None

    def wanted(self, bundle: SkillBundle) -> bool:
        """Whether the bundle's files must be read to check it: a market's skill unless the lock
        names it by its listing (:func:`by_listing`), a skill the ``skills`` CLI pinned; never a
        dynamic one."""
        if bundle.dynamic:
            return False
        return (self.is_market and not by_listing(bundle)) or bundle.folder in self.pins

    def judge(self, bundle: SkillBundle, files: Mapping[str, bytes] | None) -> tuple[bool, Diagnostic | None]:
        """Whether the bundle may be served under the lock, and what to report about it: a
        ``lock-drift`` error when it may not (see :meth:`check`; ``files`` are its files when
        :meth:`wanted`), a ``lock-dynamic`` warning for a dynamic skill the lock records as
        dynamic, which is served unpinned."""
        if bundle.dynamic:
            said = self._dynamic(bundle.key, bundle.folder)
            return said is None or said.severity != "error", said
        if not self.is_market and bundle.folder not in self.pins:
            return True, None
        drift = self.check(bundle, files)
        return drift is None, drift

    def _dynamic(self, key: str, folder: str) -> Diagnostic | None:
        """What the lock makes of a dynamic skill, which has no digest to compare."""
        if folder in self.pins:
            return self._drift(
                f"skill {folder!r} is dynamic (its server makes it afresh on each read), so it cannot match its "
                f"pin in {SKILLS_LOCK_NAME}: not served"
            )
        if not self.is_market:
            return None
        if self.market is None:
            return self._unknown_market(folder)
        if self._elsewhere is not None:
            return self._other_source(folder)
        locked = self.market.skills.get(key)
        if locked is None:
            return self._drift(f"skill {folder!r} (dynamic) is not in the lock: not served")
        if not locked.dynamic:
            return self._drift(
                f"skill {folder!r} drifted: locked {locked.shown}, now dynamic (its server makes it afresh on each "
                f"read, with no digest); not served (run `harness skills update {self.source}` to accept the change)"
            )
        return Diagnostic.warning(
            code="lock-dynamic",
            message=(
                f"lock: market {self.source!r}: skill {folder!r} is dynamic: its server makes it afresh on each read, "
                "so the lock records it as dynamic but cannot pin its content; it is served unpinned (never verified, "
                "staged or run, its files scanned on every read)"
            ),
            location=self.source,
        )

    def check(self, bundle: SkillBundle, files: Mapping[str, bytes] | None) -> Diagnostic | None:
        """Why the bundle must not be served (a ``lock-drift`` error), or ``None``. ``files``
        are its files, ``None`` when they could not be read (or were not, see :meth:`wanted`)."""
        key, folder = bundle.key, bundle.folder
        if self.is_market:
            if self.market is None:
                return self._unknown_market(folder)
            if self._elsewhere is not None:
                return self._other_source(folder)
            now = _digest(bundle, files)
            if now is None:
                return self._unreadable(folder)
            locked = self.market.skills.get(key)
            if locked is None:
                return self._drift(f"skill {folder!r} (now {now}) is not in the lock: not served")
            if locked.digest != now:
                return self._drift(
                    f"skill {folder!r} drifted: locked {locked.shown}, now {now}; the locked content cannot be "
                    f"served from this market, so the skill is not served (run `harness skills update {self.source}` "
                    "to accept the change)"
                )
        pin = self.pins.get(folder)
        if pin is None:
            return None
        if files is None:
            return self._unreadable(folder)
        if pin not in skills_cli_hashes(files):
            return self._drift(
                f"skill {folder!r} does not match its pin in {SKILLS_LOCK_NAME} (computedHash {pin}): not served"
            )
        return None

    def missing(self, keys: Iterable[str]) -> list[Diagnostic]:
        """A ``lock-drift`` error for each locked skill the market no longer offers."""
        if not self.is_market or self.market is None:
            return []
        seen = set(keys)
        return [
            self._drift(f"locked skill {key!r} ({skill.shown}) is gone from the market")
            for key, skill in sorted(self.market.skills.items())
            if key not in seen
        ]

    def _unreadable(self, folder: str) -> Diagnostic:
        return self._drift(f"skill {folder!r}: its files could not be read to check them against the lock")

    def _other_source(self, folder: str) -> Diagnostic:
        return self._drift(
            f"{self._elsewhere}: the lock was written for another source, so skill {folder!r} is not served "
            f"(run `harness skills update {self.source}` to lock the configured one)"
        )

    def _unknown_market(self, folder: str) -> Diagnostic:
        return self._drift(
            f"market {self.source!r} is not in the lock: skill {folder!r} is not served "
            f"(run `harness skills update {self.source}` to lock it)"
        )

    def _drift(self, message: str) -> Diagnostic:
        what = "market" if self.is_market else "layer"
        return Diagnostic.error(
            code="lock-drift", message=f"lock: {what} {self.source!r}: {message}", location=self.source
        )


def _elsewhere(market: LockedMarket, repository: SkillRepository) -> str | None:
    """Why the locked ``market`` is not the configured ``repository`` (another kind or
    location), or ``None``."""
    kind, location = _kind(repository), _location(repository)
    if (market.kind, market.location) == (kind, location):
        return None
    return f"locked as {market.kind} at {market.location!r}, but configured as {kind} at {location!r}"
