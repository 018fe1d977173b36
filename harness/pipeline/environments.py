"""Per-skill Python environments: what each skill needs, built once per requirement set.

For every skill of layers 1–3 (global, markets, workspace) the requirements come from its files
(:mod:`harness.pipeline.requirements`), from the operator (``packages`` per skill or per market)
and, for the markets in ``infer_for``, from its scripts' imports. A market's own declarations
are built only for trusted markets (``trusted_markets``, or ``untrusted_markets=True``); the
operator's packages always are. Users' own skills get no environment.

Environments are **content-addressed**: ``<workspace>/.skills-cache/.envs/<hash>/``, the hash
over the sorted canonical requirements, the shell's Python (implementation, version, machine)
and the index settings, so skills with the same requirements share one folder. A build runs uv
(:mod:`harness.pipeline.uv`) into ``.envs/.build-<hash>-<random>`` next to it, checks the size,
makes everything readable (a sandbox runs as another uid) and renames it into place, under the
workspace filesystem's lock on the hash, so two processes never build the same one twice (the
second waits and finds it). ``.skills-cache`` is projected read-only into every sandbox, the
stager removes only skill folders (never dot-folders) and the watcher ignores it.

Builds run **in the background**: :meth:`EnvironmentManager.track` (called by a staging turn
when the shared layers changed, and when a skill of an on-demand market such as an MCP server is
first loaded or run: its files are read only then) hands the skills to one worker task, which
reads their files, then builds what is missing one at a time. A turn never waits: while a build runs, or after it
failed, the skill's ``environment`` is ``None`` and a diagnostic says so. A failed requirement
set is not retried until :meth:`EnvironmentManager.refresh` or until the requirements change.
A warm turn (nothing changed) costs an identity check: no file operation.

A **command** of a skill is another matter (:meth:`EnvironmentManager.using`): when its
environment is being built, or not yet (queued, or the skill's requirements not read yet), the
command waits for that build — started at once, beside whatever the worker builds — up to the
build's ``timeout``, with a progress report; it is refused, never run without its packages,
when the build failed, when it outlasts the wait or when ``wait`` is off. Commands of other
skills never wait. When nothing is pending the answer comes from memory.

Every process **leases** what it needs (:mod:`harness.pipeline.leases`, in ``.envs/.leases``):
the environments of the skills it serves and of the commands running now; the lease is renewed
by :meth:`EnvironmentManager.upkeep`. :meth:`EnvironmentManager.reclaim` removes the
environments no live lease names once they have been unneeded for ``retention`` seconds
(:mod:`harness.pipeline.reclaim`); ``upkeep`` does so when ``retention`` is set.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import json
import logging
import math
import os
import shlex
import shutil
import stat
import time
from collections import Counter
from collections.abc import AsyncIterator, Collection, Iterable, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Literal, Self

import anyio

from filesystems import (
    CACHE_DIR,
    AbstractFilesystem,
    AsyncResource,
    BackgroundTasks,
    CommandResult,
    LockTimeout,
    redact_secrets,
    redact_url,
)
from harness.diagnostics import Diagnostic
from harness.pipeline.layers import LayerEntry, describe_error
from harness.pipeline.leases import Lease
from harness.pipeline.plan import CommandEnvironments, EnvironmentWait, ResolvedSkill
from harness.pipeline.reclaim import (
    DEFAULT_RETENTION,
    Reclaimed,
    build_leftovers,
    empty_trash,
    remove_builds,
    sweep,
    tree_size,
)
from harness.pipeline.records import changes
from harness.pipeline.requirements import (
    Requirement,
    files_to_read,
    infer_imports,
    operator_requirements,
    read_requirements,
)
from harness.pipeline.uv import EnvironmentBuildError, IndexSettings, install
from harness.skills.skill import Layer

if TYPE_CHECKING:
    from filesystems import ProgressCallback, ProgressReporter
    from harness.pipeline.status import PipelineObserver

__all__ = ["ENVS_DIR", "EnvironmentManager", "EnvironmentOptions", "EnvironmentState", "SkillEnvironment"]

log = logging.getLogger(__name__)

#: Where environments live, relative to the workspace (inside the staging cache).
ENVS_DIR = f"{CACHE_DIR}/.envs"
DEFAULT_MAX_SIZE = 1024 * 1024 * 1024
DEFAULT_TIMEOUT = 600.0
_PROBE_TIMEOUT = 30.0
_LOCK = "skill-environments"  # held to write a lease and learn what exists, and by a reclamation
_LEASES = ".leases"
_RETRY_HINT = (5.0, 30.0)  # seconds a refused command is told to wait before trying again
# What the shell's python3 is: a host path for uv, and the parts of the environment's hash.
_PROBE = (
    "python3 -c 'import json, platform, sys; print(json.dumps([sys.executable, sys.implementation.name, "
    '"%d.%d" % sys.version_info[:2], platform.machine()]))\''
)

# Prints the canonical names of the distributions installed in the folder given as argument.
_LIST_DISTRIBUTIONS = (
    "import importlib.metadata as m, json, re, sys; "
    "print(json.dumps(sorted({re.sub(r'[-_.]+', '-', d.metadata['Name']).lower() "
    "for d in m.distributions(path=[sys.argv[1]])})))"
)

EnvironmentState = Literal["none", "untrusted", "missing", "building", "ready", "failed"]


@dataclass(frozen=True, kw_only=True)
class EnvironmentOptions:
    """How skills' Python environments are built (``Harness(pipeline=PipelineOptions(environments=...))``,
    ``harness.yaml`` ``environments:``).

    ``index_url`` replaces the default index (an offline mirror), ``find_links`` adds folders
    or pages of wheels, ``no_index`` uses only those; ``only_binary`` (default) installs wheels
    only — with ``False`` uv may build source distributions, which runs their build code on the
    host. ``max_size`` caps one environment (bytes, checked before it is served); ``timeout``
    caps one build (seconds), and how long a command of the skill waits for it: with ``wait``
    (default) a command of a skill whose environment is being built waits for it, without it
    the command is refused at once, its result saying when to try again. ``retention``
    (seconds, default 7 days) is how long an environment no live process needs is kept before
    :meth:`EnvironmentManager.upkeep` removes it; ``None`` reclaims nothing automatically
    (``harness skills env --gc`` still does). Markets' own requirements are built for ``trusted_markets``
    (exact slugs; ``None``: the agent's ``trusted_markets``) or, with ``untrusted_markets``,
    for every market; global and workspace skills are the operator's and always built.
    ``infer_for`` lists the sources (market slugs, ``workspace``, ``global``) whose scripts'
    imports are mapped to packages. ``skill_packages`` (by skill name or id) and
    ``market_packages`` (by market slug) add the operator's packages.
    """

    index_url: str | None = None
    find_links: tuple[str, ...] = ()
    no_index: bool = False
    only_binary: bool = True
    max_size: int = DEFAULT_MAX_SIZE
    timeout: float = DEFAULT_TIMEOUT
    wait: bool = True
    retention: float | None = DEFAULT_RETENTION
    trusted_markets: frozenset[str] | None = None
    untrusted_markets: bool = False
    infer_for: frozenset[str] = frozenset()
    skill_packages: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    market_packages: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.index_url is not None and not self.index_url.startswith(("https://", "http://", "file://")):
            raise ValueError(f"index_url {redact_url(self.index_url)!r} must be an http(s):// or file:// URL")
        object.__setattr__(self, "find_links", tuple(self.find_links))
        for link in self.find_links:
            if not link.startswith(("/", "https://", "http://", "file://")):
                raise ValueError(
                    f"find_links entry {redact_url(link)!r} must be an absolute folder or an http(s):// URL"
                )
        if isinstance(self.max_size, bool) or not isinstance(self.max_size, int) or self.max_size < 1:
            raise ValueError(f"max_size {self.max_size!r} must be a positive number of bytes")
        if isinstance(self.timeout, bool) or not isinstance(self.timeout, (int, float)) or not self.timeout > 0:
            raise ValueError(f"timeout {self.timeout!r} must be a positive number of seconds")
        retention = self.retention
        if retention is not None and (
            isinstance(retention, bool) or not isinstance(retention, (int, float)) or not retention >= 0
        ):
            raise ValueError(f"retention {retention!r} must be a number of seconds (0 or more) or None")
        if self.trusted_markets is not None:
            object.__setattr__(self, "trusted_markets", frozenset(self.trusted_markets))
        object.__setattr__(self, "infer_for", frozenset(self.infer_for))
        for name in ("skill_packages", "market_packages"):
            packages = {str(k): tuple(v) for k, v in getattr(self, name).items()}
            for key, values in packages.items():
                try:
                    operator_requirements(values, f"{name}.{key}")
                except ValueError as exc:
                    raise ValueError(str(exc)) from None
            object.__setattr__(self, name, MappingProxyType(packages))

    def __repr__(self) -> str:
        fields = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in dataclasses.fields(self))
        return redact_secrets(f"EnvironmentOptions({fields})")  # index credentials

    @property
    def index(self) -> IndexSettings:
        """The index settings uv is given (and that every environment's hash includes)."""
        return IndexSettings(
            index_url=self.index_url, find_links=self.find_links, no_index=self.no_index, only_binary=self.only_binary
        )


@dataclass(frozen=True, kw_only=True, slots=True)
class SkillEnvironment:
    """What one skill needs: its requirements (``built`` ones go into its environment), the
    problems met reading them, imports no package is known for, and the environment's hash
    (``None`` when nothing is to be built)."""

    skill_id: str
    requirements: tuple[Requirement, ...] = ()
    built: tuple[str, ...] = ()
    problems: tuple[str, ...] = ()
    unknown_imports: tuple[str, ...] = ()
    trusted: bool = True
    key: str | None = None

    def as_dict(self) -> dict[str, object]:
        """The JSON shape of ``harness skills env --json`` (without the state)."""
        return {
            "skill_id": self.skill_id,
            "requirements": [r.as_dict() for r in self.requirements],
            "problems": list(self.problems),
            "unknown_imports": list(self.unknown_imports),
            "trusted": self.trusted,
            "hash": self.key,
        }


@dataclass(frozen=True, kw_only=True, slots=True)
class _Python:
    """The interpreter the shell runs ``python3`` with."""

    executable: str
    tag: str  # implementation-version-machine, part of every hash


class EnvironmentManager(AsyncResource):
    """Finds, builds and serves the skills' environments of one workspace (see the module).

    Enter it (``async with``) to run the background worker; :meth:`track` only records the
    skills otherwise. :meth:`environment` and :meth:`diagnostics` answer from memory.

    ``progress``, when given, hears about each build this process runs:
    ``Progress(task="installing", subject=<skill id>, total=<requirements>, unit="packages")``
    when it starts, and a final report when it ends (``done`` is the total when it succeeded,
    0 when it failed). An environment found on disk is no build and reports nothing. A command
    that waits for a build reports ``Progress(task="waiting for environment", subject=<skill
    id>, done=<seconds waited>, total=<timeout>, unit="s")`` about every second, and a final one.
    ``observer`` (set by the pipeline, see :meth:`SkillPipeline.observe
    <harness.pipeline.SkillPipeline.observe>`) hears how each build ended and how long it took.
    """

    def __init__(
        self, filesystem: AbstractFilesystem, options: EnvironmentOptions, *, progress: ProgressCallback | None = None
    ) -> None:
        super().__init__()
        folder = filesystem.host_path(ENVS_DIR) if filesystem.has_shell else None
        if folder is None:
            raise ValueError("skill environments need a filesystem with a shell on this host")
        if filesystem.shell_isolated and options.untrusted_markets and not options.only_binary:
            raise ValueError(
                "environments: only_binary: false with untrusted_markets: true would run the build code of "
                "any market's source distributions on this host, outside the sandbox; keep only_binary "
                "or name the markets you trust in trusted_markets"
            )
        self.filesystem = filesystem
        self.options = options
        self.folder = folder
        self.progress = progress
        self.observer: PipelineObserver | None = None
        self.generation = 0  # bumped whenever an environment or a diagnostic changes
        self._python: _Python | None = None
        self._problem: str | None = None  # why nothing can be built (no python3, ...)
        self._found: dict[tuple[str, str, str], SkillEnvironment] = {}  # (source, key, digest)
        self._needs: dict[str, SkillEnvironment] = {}
        self._states: dict[str, tuple[EnvironmentState, str]] = {}  # hash -> (state, reason)
        self._sizes: dict[str, int] = {}  # hash -> bytes, of the environments known to be ready
        self._tracked: object = None
        self._pending: tuple[ResolvedSkill, ...] | None = None
        self._busy = False
        self._wake = anyio.Event()
        self._stack = AsyncExitStack()
        self._diagnostics: tuple[Diagnostic, ...] = ()
        self._entries: dict[str, LayerEntry] = {}  # the entry each of ``_needs`` was found for
        self._probing = anyio.Lock()
        self._tasks: BackgroundTasks | None = None
        self._running: dict[str, anyio.Event] = {}  # hash -> set when its build (in this process) ends
        self._started: dict[str, float] = {}  # hash -> when its build began (monotonic)
        self._lease = Lease(folder / _LEASES)
        self._held: set[str] = set()  # hashes the lease names besides those in use
        self._in_use: Counter[str] = Counter()  # hashes commands run with now

    async def __aenter__(self) -> Self:
        self._tasks = await self._stack.enter_async_context(BackgroundTasks())
        self._tasks.start_soon(self._work, name="harness-environments")
        return await super().__aenter__()

    async def _aclose(self) -> None:
        try:
            await self._stack.aclose()
        finally:
            await anyio.to_thread.run_sync(self._lease.release)

    # -- what a turn asks (memory only) ------------------------------------------------------

    def track(self, key: object, skills: Iterable[ResolvedSkill]) -> None:
        """Bring the environments in line with ``skills`` in the background; ``key`` names the
        set (the pipeline's merged base): the same key again costs nothing."""
        if key is self._tracked:
            return
        self._tracked = key
        self._pending = tuple(skills)
        self._wake.set()

    def environment(self, skill_id: str) -> str | None:
        """The skill's environment folder as the shell sees it, when it is ready."""
        need = self._needs.get(skill_id)
        if need is None or need.key is None or self.state(need)[0] != "ready":
            return None
        return self.shell_folder(need.key)

    def shell_folder(self, key: str) -> str:
        """The folder of the environment ``key`` as the shell sees it."""
        return self.filesystem.shell_path(f"{ENVS_DIR}/{key}")

    @property
    def idle(self) -> bool:
        """Whether the worker has handled every :meth:`track` (nothing read or built now)."""
        return self._pending is None and not self._busy

    @property
    def size(self) -> int:
        """Bytes of the ready environments this process built or found (from memory; safe to
        read from another thread)."""
        return sum(self._sizes.copy().values())

    @property
    def diagnostics(self) -> tuple[Diagnostic, ...]:
        """What the current skills' environments report: refused requirements, unknown imports,
        builds running or failed."""
        return self._diagnostics

    def refresh(self) -> None:
        """Forget what was read and which builds failed: the next :meth:`track` starts over."""
        self._found.clear()
        self._states = {k: v for k, v in self._states.items() if v[0] == "ready"}
        self._python, self._problem = None, None
        self._tracked = None

    # -- finding requirements ------------------------------------------------------------------

    async def discover(self, skills: Iterable[ResolvedSkill]) -> dict[str, SkillEnvironment]:
        """What each skill needs (its files read through its layer, unchanged skills not read
        again); skills of users' own layers are left out, and so are dynamic skills (an MCP
        server's, made afresh on each read): such a skill never runs."""
        python = await self.python()
        found: dict[str, SkillEnvironment] = {}
        for skill in skills:
            if skill.skill.layer is Layer.USER or skill.entry.dynamic:
                continue
            found[skill.skill.skill_id] = await self._discover_one(skill, python)
        return found

    async def python(self) -> _Python | None:
        """The shell's ``python3`` (asked once through the shell), or ``None`` when it has none."""
        async with self._probing:
            if self._python is None and self._problem is None:
                result = await self.filesystem.run(_PROBE, timeout=_PROBE_TIMEOUT)
                self._python, self._problem = _parse_probe(result)
        return self._python

    async def _discover_one(self, skill: ResolvedSkill, python: _Python | None) -> SkillEnvironment:
        skill_id = skill.skill.skill_id
        try:
            listing = await skill.source.list_files(skill.entry)
        except Exception as exc:  # a market that cannot list: reported, the skill gets none
            return SkillEnvironment(skill_id=skill_id, problems=(f"cannot list its files: {describe_error(exc)}",))
        cache_key = (skill.source.source, skill.entry.key, listing.digest)
        cached = self._found.get(cache_key)
        if cached is not None and (cached.key is None or python is not None):
            return cached
        paths = [f.path for f in listing.files]
        wanted, unread = files_to_read((f.path, f.size) for f in listing.files)
        try:
            files = await skill.source.read_files(skill.entry, wanted) if wanted else {}
        except Exception as exc:
            return SkillEnvironment(skill_id=skill_id, problems=(f"cannot read its files: {describe_error(exc)}",))
        # Parsing a megabyte of scripts takes a while: not on the event loop that serves turns.
        need = await anyio.to_thread.run_sync(self._need, skill, paths, files, python, unread)
        self._found[cache_key] = need
        return need

    def _need(
        self,
        skill: ResolvedSkill,
        paths: Sequence[str],
        files: Mapping[str, bytes],
        python: _Python | None,
        unread: Sequence[str] = (),
    ) -> SkillEnvironment:
        sources = {skill.source.source, skill.skill.source}
        market = skill.skill.layer is Layer.MARKET
        trusted_markets = self.options.trusted_markets or frozenset()
        trusted = not market or self.options.untrusted_markets or not sources.isdisjoint(trusted_markets)
        declared = read_requirements(files, unread)
        requirements = list(declared.requirements)
        unknown: tuple[str, ...] = ()
        if trusted and not sources.isdisjoint(self.options.infer_for):
            inferred = infer_imports(files, paths, declared=[r.name for r in requirements])
            requirements += inferred.requirements
            unknown = inferred.unknown
        operator = [
            *self.options.skill_packages.get(skill.skill.name, ()),
            *self.options.skill_packages.get(skill.skill.skill_id, ()),
            *(p for s in sorted(sources) for p in self.options.market_packages.get(s, ())),
        ]
        given = operator_requirements(dict.fromkeys(operator), "harness.yaml")  # checked when the options were made
        requirements += given
        built = sorted({r.text for r in (requirements if trusted else given)})
        key = _hash(built, python.tag, self.options.index) if built and python is not None else None
        return SkillEnvironment(
            skill_id=skill.skill.skill_id,
            requirements=tuple(requirements),
            built=tuple(built),
            problems=declared.problems,
            unknown_imports=unknown,
            trusted=trusted,
            key=key,
        )

    # -- state and building ----------------------------------------------------------------

    def state(self, need: SkillEnvironment) -> tuple[EnvironmentState, str]:
        """The environment's state and, for a failure, why (from memory: see :meth:`look`)."""
        if need.key is None:
            if need.requirements and not need.trusted:
                return "untrusted", ""
            if need.built and self._problem:
                return "failed", self._problem
            return "none", ""
        return self._states.get(need.key, ("missing", ""))

    async def look(self, needs: Iterable[SkillEnvironment]) -> None:
        """Hold ``needs``' environments (this process's lease names them, so no reclamation
        removes them) and learn from disk which of them exist (another process may have built
        them)."""
        await self._hold({n.key for n in needs if n.key is not None})

    async def _hold(self, keys: set[str], *, only: bool = False) -> None:
        """Add ``keys`` to the lease (``only``: the lease names them and those in use, nothing
        else) and mark those that exist ready, under the lock a reclamation takes."""
        held = keys if only else self._held | keys
        async with self.filesystem.lock(_LOCK):
            found = await anyio.to_thread.run_sync(self._claim, held, keys)
        self._held = held
        # An environment seen for the first time is measured once: its size is kept.
        fresh = [key for key in found if key not in self._sizes]
        if fresh:
            self._sizes.update(await anyio.to_thread.run_sync(lambda: {k: tree_size(self.folder / k) for k in fresh}))
        for key in found:
            self._states[key] = ("ready", "")

    def _claim(self, held: set[str], keys: set[str], *, renew: bool = False) -> set[str]:
        """Write the lease when it changes (or ``renew``) and return which of ``keys`` exist,
        their time set to now (see :mod:`harness.pipeline.reclaim`). Blocking, under the lock."""
        wanted = held | set(self._in_use)
        if wanted != self._lease.keys or (renew and self._lease.written) or (wanted and not self._lease.written):
            self._lease.write(wanted)
        now = time.time()
        found = set()
        for key in keys:
            path = self.folder / key
            with contextlib.suppress(FileNotFoundError):
                if stat.S_ISDIR(os.lstat(path).st_mode):
                    os.utime(path, (now, now), follow_symlinks=False)
                    found.add(key)
        return found

    async def build(self, need: SkillEnvironment) -> tuple[EnvironmentState, str]:
        """Build ``need``'s environment unless it exists (waiting while another process builds
        it); returns the new state. A failure is a state with uv's error line, never raised."""
        python = await self.python()
        if need.key is None or python is None:
            return self.state(need)
        key = need.key
        wait = self.options.timeout + 60  # a build elsewhere ends within its timeout
        try:
            async with self.filesystem.lock(f"skill-environment/{key}", timeout=wait):
                await self.look([need])
                if self.state(need)[0] != "ready":
                    await self._build_locked(need, key, python)
        except LockTimeout:
            self._set(key, "failed", f"another process held its build lock for over {wait:g} s")
        return self.state(need)

    async def _build_locked(self, need: SkillEnvironment, key: str, python: _Python) -> None:
        self._started[key] = time.monotonic()
        self._set(key, "building", "")
        reporter = self._reporter(need)
        began = time.monotonic()
        try:
            self._sizes[key] = await self._build(key, need.built, python)
        except (EnvironmentBuildError, OSError) as exc:
            reason = f"{', '.join(need.built)}: {exc}"
            log.warning("environment %s of %s failed: %s", key, need.skill_id, reason)
            self._set(key, "failed", reason)
            self._built(ok=False, began=began)
        else:
            if reporter is not None:
                reporter.advance(len(need.built))
            self._set(key, "ready", "")
            self._built(ok=True, began=began)
        finally:
            self._started.pop(key, None)
            if reporter is not None:
                reporter.finish()

    def _built(self, *, ok: bool, began: float) -> None:
        """Tell the observer how a build that began at ``began`` (monotonic) ended."""
        if self.observer is not None:
            self.observer.environment_built(ok=ok, seconds=time.monotonic() - began)

    def _reporter(self, need: SkillEnvironment) -> ProgressReporter | None:
        """A reporter of one build, when someone listens."""
        if self.progress is None:
            return None
        from filesystems import ProgressReporter  # loaded only by programs that listen

        return ProgressReporter(
            self.progress, task="installing", total=len(need.built), unit="packages", subject=need.skill_id
        )

    async def _build(self, key: str, requirements: Sequence[str], python: _Python) -> int:
        """Build the environment ``key`` and return its size (bytes)."""
        temp = await anyio.to_thread.run_sync(self._fresh_temp, key)
        try:
            await install(
                requirements,
                target=temp,
                python=python.executable,
                index=self.options.index,
                timeout=self.options.timeout,
            )
            return await anyio.to_thread.run_sync(self._finish, temp, key)
        finally:
            await anyio.to_thread.run_sync(lambda: shutil.rmtree(temp, ignore_errors=True))

    def _fresh_temp(self, key: str) -> Path:
        """An empty build folder next to the environments, after removing what a killed build
        of the same hash left (we hold that hash's lock)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        for stale in self.folder.glob(f".build-{key}-*"):
            shutil.rmtree(stale, ignore_errors=True)
        temp = self.folder / f".build-{key}-{os.urandom(4).hex()}"
        temp.mkdir()
        return temp

    def _finish(self, temp: Path, key: str) -> int:
        """Check the size, make everything readable and nothing writable but by us, rename;
        returns the size."""
        (temp / ".lock").unlink(missing_ok=True)  # uv's own lock file of the target
        size = 0
        for root, _dirs, files in os.walk(temp):
            os.chmod(root, 0o755)
            for name in files:
                path = os.path.join(root, name)
                info = os.lstat(path)
                if stat.S_ISREG(info.st_mode):
                    size += info.st_size
                    os.chmod(path, 0o755 if info.st_mode & 0o111 else 0o644)
            if size > self.options.max_size:
                raise OSError(f"the environment is over {self.options.max_size} bytes (environments.max_size)")
        os.rename(temp, self.folder / key)
        return size

    async def check(self, need: SkillEnvironment) -> tuple[str, ...]:
        """What is wrong with ``need``'s environment as the shell sees it: missing, changed since
        it was built (files its distributions' RECORDs do not list or list with other bytes), or
        a required distribution that the shell's ``python3`` does not find in it (empty when all
        is well)."""
        await self.look([need])
        state, reason = self.state(need)
        if state in ("none", "untrusted"):
            return ()
        if state != "ready" or need.key is None:
            return (f"the environment is {state}" + (f": {reason}" if reason else ""),)
        folder = self.shell_folder(need.key)
        result = await self.filesystem.run(
            f"python3 -c {shlex.quote(_LIST_DISTRIBUTIONS)} {shlex.quote(folder)}", timeout=_PROBE_TIMEOUT
        )
        try:
            present = set(json.loads(result.stdout))
        except ValueError:
            return (f"python3 cannot read {folder}: {result.stderr.strip() or f'exit {result.exit_code}'}",)
        wanted = {r.name for r in need.requirements if r.text in need.built}
        changed = await anyio.to_thread.run_sync(changes, self.folder / need.key)
        return (
            *([f"{folder} changed since it was built: {changed}"] if changed else []),
            *(f"{name} is not installed in {folder}" for name in sorted(wanted - present)),
        )

    def _set(self, key: str, state: EnvironmentState, reason: str) -> None:
        self._states[key] = (state, reason)
        self._publish()

    # -- the worker ------------------------------------------------------------------------------

    async def _work(self) -> None:
        while True:
            await self._wake.wait()
            self._wake = anyio.Event()
            skills, self._pending = self._pending, None
            if skills is None:
                continue
            self._busy = True
            try:
                await self._update(skills)
            except Exception as exc:  # reported on every skill that needs one; refresh() tries again
                log.warning("skill environments: %s", describe_error(exc))
                self._problem = describe_error(exc)
                self._publish()
            finally:
                self._busy = False

    async def _update(self, skills: Sequence[ResolvedSkill]) -> None:
        self._needs = await self.discover(skills)
        self._entries = {s.skill.skill_id: s.entry for s in skills if s.skill.skill_id in self._needs}
        await self._hold({n.key for n in self._needs.values() if n.key is not None}, only=True)
        self._publish()
        for need in list(self._needs.values()):
            if self._pending is not None:
                return  # the skills changed meanwhile: the next round starts over
            if self.state(need)[0] == "missing":
                await self._start(need).wait()

    def _start(self, need: SkillEnvironment) -> anyio.Event:
        """Build ``need``'s environment in a task of its own unless this process builds it
        already; the event is set when that build ends (the worker and waiting commands share it)."""
        assert need.key is not None and self._tasks is not None
        key = need.key
        running = self._running.get(key)
        if running is None:
            running = self._running[key] = anyio.Event()

            async def build() -> None:
                try:
                    await self.build(need)
                finally:
                    del self._running[key]
                    running.set()

            self._tasks.start_soon(build, name=f"harness-environment:{key[:12]}")
        return running

    # -- commands (what the shell tool asks) -------------------------------------------------

    @asynccontextmanager
    async def using(self, skills: Sequence[ResolvedSkill]) -> AsyncIterator[CommandEnvironments]:
        """The environments a command of ``skills`` runs with, held while the block runs (a
        reclamation leaves them alone, see the module): each skill's folder when it is ready.
        A skill whose environment is being built, or not yet, is waited for (see the module) —
        or the result is ``refused``, saying why and when to try again. From memory when
        nothing is pending; skills of users' own layers and dynamic ones have none."""
        ready: dict[str, str] = {}
        keys: list[str] = []
        waits: list[EnvironmentWait] = []
        refused: list[str] = []
        for skill in skills:
            need = await self._need_now(skill)
            if need is None or need.key is None:
                if need is not None and self.state(need)[0] == "failed":
                    refused.append(self._refusal(need))
                continue
            if self.state(need)[0] in ("missing", "building"):
                if self.options.wait:
                    waits.append(await self._wait(need))
            if self.state(need)[0] == "ready":
                ready[need.skill_id] = self.shell_folder(need.key)
                keys.append(need.key)
            else:
                refused.append(self._refusal(need))
        self._in_use.update(keys)
        try:
            if not set(keys) <= self._lease.keys:  # the skills changed since: the lease names it again
                async with self.filesystem.lock(_LOCK):
                    await anyio.to_thread.run_sync(self._claim, self._held, set())
            yield CommandEnvironments(folders=ready, waits=tuple(waits), refused="\n".join(refused) or None)
        finally:
            self._in_use.subtract(keys)
            for key in keys:
                if self._in_use[key] <= 0:
                    del self._in_use[key]

    async def _need_now(self, skill: ResolvedSkill) -> SkillEnvironment | None:
        """What ``skill`` needs: from memory when the worker read this very entry, else read now
        (and held, its state learnt from disk); ``None`` for a skill that gets no environment."""
        if skill.skill.layer is Layer.USER or skill.entry.dynamic:
            return None
        skill_id = skill.skill.skill_id
        need = self._needs.get(skill_id)
        if need is not None and self._entries.get(skill_id) is skill.entry:
            return need
        need = await self._discover_one(skill, await self.python())
        await self.look([need])
        return need

    async def _wait(self, need: SkillEnvironment) -> EnvironmentWait:
        """Wait for ``need``'s build (started now unless it runs already) up to the build's
        timeout, reporting the wait to ``progress`` about every second."""
        assert need.key is not None
        began = time.monotonic()
        if self._tasks is None:  # not entered: no background builds, so build it here
            await self.build(need)
        else:
            done = self._start(need)
            reporter = None
            if self.progress is not None:
                from filesystems import ProgressReporter  # loaded only by programs that listen

                reporter = ProgressReporter(
                    self.progress,
                    task="waiting for environment",
                    total=math.ceil(self.options.timeout),
                    unit="s",
                    subject=need.skill_id,
                    interval=0.0,
                )
            try:
                with anyio.move_on_after(self.options.timeout):
                    while not done.is_set():
                        with anyio.move_on_after(1.0):
                            await done.wait()
                        if reporter is not None:
                            reporter.update(int(time.monotonic() - began))
            finally:
                if reporter is not None:
                    reporter.finish()
        return EnvironmentWait(skill_id=need.skill_id, seconds=time.monotonic() - began, state=self.state(need)[0])

    def _refusal(self, need: SkillEnvironment) -> str:
        """Why a command of ``need``'s skill is not run, and when to try again."""
        state, reason = self.state(need)
        packages = ", ".join(need.built)
        if state == "failed":
            return (
                f"{need.skill_id}: its Python environment ({packages}) could not be built, so the command was "
                f"not run: it would not find its packages. Why: {reason}. It is built again when the skill's "
                f"requirements change or an operator runs `harness skills env --build {need.skill_id}`."
            )
        began = self._started.get(need.key or "")
        left = self.options.timeout - (time.monotonic() - began if began is not None else 0.0)
        retry = math.ceil(min(max(left, _RETRY_HINT[0]), _RETRY_HINT[1]))
        return (
            f"{need.skill_id}: its Python environment ({packages}) is still being built, so the command was "
            f"not run: it would not find its packages. Run it again in about {retry} s."
        )

    # -- reclaiming ------------------------------------------------------------------------------

    async def upkeep(self) -> Reclaimed | None:
        """Renew this process's lease (another host's process counts it live for a day after
        its last write) and, with ``retention`` set, :meth:`reclaim` what no process needs.
        The pipeline calls it periodically while it is entered."""
        if self._lease.written:
            async with self.filesystem.lock(_LOCK):
                await anyio.to_thread.run_sync(functools.partial(self._claim, self._held, self._held, renew=True))
        if self.options.retention is None:
            return None
        return await self.reclaim(retention=self.options.retention)

    async def reclaim(self, *, retention: float, keep: Collection[str] = ()) -> Reclaimed:
        """Remove the environments no live process's lease names (nor ``keep``) that have been
        unneeded for ``retention`` seconds, the trash of interrupted reclamations and the
        folders killed builds left (see :mod:`harness.pipeline.reclaim`); returns what it did."""

        def locked() -> Reclaimed:
            needed = self._lease.others() | self._held | set(self._in_use) | set(keep)
            return sweep(self.folder, needed=needed, retention=retention)

        async with self.filesystem.lock(_LOCK):  # only renames happen under it
            result = await anyio.to_thread.run_sync(locked)
        for key in result.removed:
            self._states.pop(key, None)
            self._sizes.pop(key, None)
        freed = await anyio.to_thread.run_sync(empty_trash, self.folder)
        for key in await anyio.to_thread.run_sync(build_leftovers, self.folder):
            try:  # a build holds its hash's lock: what is there without it is a killed build's
                async with self.filesystem.lock(f"skill-environment/{key}", timeout=0):
                    freed += await anyio.to_thread.run_sync(remove_builds, self.folder, key)
            except LockTimeout:
                continue
        return dataclasses.replace(result, freed=freed)

    def _publish(self) -> None:
        """Rebuild the diagnostics from the current needs and states and bump the generation."""
        found = [d for need in self._needs.values() for d in _diagnostics(need, *self.state(need))]
        if self._problem and not self._needs:
            found.append(
                Diagnostic.error(
                    code="environment-failed",
                    message=f"skill environments cannot be built: {self._problem}",
                    location=str(self.folder),
                )
            )
        self._diagnostics = tuple(found)
        self.generation += 1


def _hash(requirements: Collection[str], python: str, index: IndexSettings) -> str:
    identity = {"requirements": sorted(requirements), "python": python, "index": dataclasses.asdict(index)}
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()


def _parse_probe(result: CommandResult) -> tuple[_Python | None, str | None]:
    """The interpreter the probe printed, else ``(None, why)``."""
    try:
        executable, implementation, version, machine = json.loads(result.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError, TypeError):
        why = result.stderr.strip().splitlines()[-1] if result.stderr.strip() else f"exit {result.exit_code}"
        return None, f"the shell has no working python3 ({why})"
    if not os.path.isfile(executable):
        return None, f"the shell's python3 ({executable}) is not a file on this host, so uv cannot build for it"
    return _Python(executable=executable, tag=f"{implementation}-{version}-{machine}"), None


def _diagnostics(need: SkillEnvironment, state: EnvironmentState, reason: str) -> list[Diagnostic]:
    found = [
        Diagnostic.warning(code="requirement-refused", message=f"{need.skill_id}: {problem}", location=need.skill_id)
        for problem in need.problems
    ]
    if need.unknown_imports:
        found.append(
            Diagnostic.warning(
                code="environment-unknown-imports",
                message=(
                    f"{need.skill_id}: no known package for the imports {', '.join(need.unknown_imports)}; "
                    "name them in harness.yaml (environments.packages)"
                ),
                location=need.skill_id,
            )
        )
    if state == "untrusted":
        found.append(
            Diagnostic.info(
                code="environment-untrusted",
                message=(
                    f"{need.skill_id}: its Python requirements are not installed: its market is not trusted "
                    "(trusted_markets, environments.untrusted_markets)"
                ),
                location=need.skill_id,
            )
        )
    elif state in ("missing", "building"):
        found.append(
            Diagnostic.info(
                code="environment-building",
                message=f"{need.skill_id}: its Python environment is being built; its commands run without it meanwhile",
                location=need.skill_id,
            )
        )
    elif state == "failed":
        found.append(
            Diagnostic.error(
                code="environment-failed",
                message=f"{need.skill_id}: its Python environment could not be built: {reason}",
                location=need.skill_id,
            )
        )
    return found
