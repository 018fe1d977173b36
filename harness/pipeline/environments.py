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
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import logging
import os
import shlex
import shutil
import stat
import time
from collections.abc import Collection, Iterable, Mapping, Sequence
from contextlib import AsyncExitStack
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
)
from harness.diagnostics import Diagnostic
from harness.pipeline.layers import describe_error
from harness.pipeline.plan import ResolvedSkill
from harness.pipeline.requirements import (
    MAX_PARSED,
    PYPROJECT,
    REQUIREMENTS_TXT,
    Requirement,
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
    caps one build (seconds). Markets' own requirements are built for ``trusted_markets``
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
    trusted_markets: frozenset[str] | None = None
    untrusted_markets: bool = False
    infer_for: frozenset[str] = frozenset()
    skill_packages: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    market_packages: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.index_url is not None and not self.index_url.startswith(("https://", "http://", "file://")):
            raise ValueError(f"index_url {self.index_url!r} must be an http(s):// or file:// URL")
        object.__setattr__(self, "find_links", tuple(self.find_links))
        for link in self.find_links:
            if not link.startswith(("/", "https://", "http://", "file://")):
                raise ValueError(f"find_links entry {link!r} must be an absolute folder or an http(s):// URL")
        if isinstance(self.max_size, bool) or not isinstance(self.max_size, int) or self.max_size < 1:
            raise ValueError(f"max_size {self.max_size!r} must be a positive number of bytes")
        if isinstance(self.timeout, bool) or not isinstance(self.timeout, (int, float)) or not self.timeout > 0:
            raise ValueError(f"timeout {self.timeout!r} must be a positive number of seconds")
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
    0 when it failed). An environment found on disk is no build and reports nothing.
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

    async def __aenter__(self) -> Self:
        tasks = await self._stack.enter_async_context(BackgroundTasks())
        tasks.start_soon(self._work, name="harness-environments")
        return await super().__aenter__()

    async def _aclose(self) -> None:
        await self._stack.aclose()

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
        wanted = [
            f.path
            for f in listing.files
            if f.size <= MAX_PARSED and (f.path.endswith(".py") or f.path in (REQUIREMENTS_TXT, PYPROJECT))
        ]
        try:
            files = await skill.source.read_files(skill.entry, wanted) if wanted else {}
        except Exception as exc:
            return SkillEnvironment(skill_id=skill_id, problems=(f"cannot read its files: {describe_error(exc)}",))
        need = self._need(skill, paths, files, python)
        self._found[cache_key] = need
        return need

    def _need(
        self, skill: ResolvedSkill, paths: Sequence[str], files: Mapping[str, bytes], python: _Python | None
    ) -> SkillEnvironment:
        sources = {skill.source.source, skill.skill.source}
        market = skill.skill.layer is Layer.MARKET
        trusted_markets = self.options.trusted_markets or frozenset()
        trusted = not market or self.options.untrusted_markets or not sources.isdisjoint(trusted_markets)
        declared = read_requirements(files)
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
        """Learn from disk which of ``needs``' environments exist (another process may have
        built them)."""
        keys = {n.key for n in needs if n.key is not None}
        measured = set(self._sizes)

        def existing() -> dict[str, int | None]:
            # An environment seen for the first time is measured once: its size is kept.
            found = [k for k in keys if (self.folder / k).is_dir()]
            return {k: None if k in measured else _tree_size(self.folder / k) for k in found}

        for key, size in (await anyio.to_thread.run_sync(existing)).items():
            self._states[key] = ("ready", "")
            if size is not None:
                self._sizes[key] = size

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
        """What is wrong with ``need``'s environment as the shell sees it: missing, or a required
        distribution that the shell's ``python3`` does not find in it (empty when all is well)."""
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
        return tuple(f"{name} is not installed in {folder}" for name in sorted(wanted - present))

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
        await self.look(self._needs.values())
        self._publish()
        for need in list(self._needs.values()):
            if self._pending is not None:
                return  # the skills changed meanwhile: the next round starts over
            if self.state(need)[0] == "missing":
                await self.build(need)

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


def _tree_size(folder: Path) -> int:
    """Bytes of the regular files below ``folder`` (links not followed)."""
    size = 0
    for root, _dirs, files in os.walk(folder):
        for name in files:
            with contextlib.suppress(OSError):
                info = os.lstat(os.path.join(root, name))
                if stat.S_ISREG(info.st_mode):
                    size += info.st_size
    return size


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
