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
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from harness.diagnostics import Diagnostic
from harness.errors import HarnessError
from repositories import GitRepository, SkillBundle, SkillRepository

__all__ = [
    "DYNAMIC",
    "LOCKFILE_NAME",
    "LOCKFILE_VERSION",
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
]

LOCKFILE_NAME = "harness.lock"
"""The lockfile's name, beside ``harness.yaml``."""
LOCKFILE_VERSION = 1
SKILLS_LOCK_NAME = "skills-lock.json"
"""The project lockfile the ``skills`` CLI writes."""


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
        """A lock from its file's text; :class:`LockError` naming ``where`` when it is not one."""
        try:
            data = json.loads(text)
            if not isinstance(data, dict) or data.get("lockfileVersion") != LOCKFILE_VERSION:
                raise ValueError(f"lockfileVersion must be {LOCKFILE_VERSION}")
            markets = {
                str(slug): LockedMarket(
                    kind=str(market["kind"]),
                    location=str(market["location"]),
                    version=str(market["version"]),
                    commit=str(market["commit"]) if market.get("commit") else None,
                    skills={
                        str(key): LockedSkill(
                            name=str(skill["name"]),
                            digest=None if skill.get("dynamic") is True else str(skill["digest"]),
                        )
                        for key, skill in dict(market["skills"]).items()
                    },
                )
                for slug, market in dict(data["markets"]).items()
            }
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise LockError(f"{where}: not a harness lockfile: {exc}") from None
        return cls(markets=markets)

    @classmethod
    def read(cls, path: str | os.PathLike[str], *, skills_lock: bool = True) -> Lockfile:
        """The lock at ``path`` plus the pins of a ``skills-lock.json`` beside it (when
        ``skills_lock``); :class:`LockError` when ``path`` is missing or broken."""
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise LockError(
                f"{path}: cannot read the lockfile ({exc.strerror or exc}); write one with `harness skills lock`"
            ) from None
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
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise LockError(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        data = json.loads(text)
        skills = data["skills"]
        return {str(name): str(entry["computedHash"]) for name, entry in skills.items() if entry.get("computedHash")}
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise LockError(f"{path}: not a skills-lock.json: {exc}") from None


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
    location = getattr(repository, "shown_url", None) or getattr(repository, "where", None) or repository.source
    return LockedMarket(
        kind=_kind(repository),
        location=str(location),
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


class LayerPins:
    """What a lock says about one layer's skills: the locked market (``None`` for a market the
    lock does not know; unused for a folder layer) and the ``skills`` CLI's pins by name."""

    def __init__(self, *, source: str, market: LockedMarket | None, is_market: bool, pins: Mapping[str, str]) -> None:
        self.source = source
        self.market = market
        self.is_market = is_market
        self.pins = dict(pins)

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
