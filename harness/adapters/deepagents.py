"""One user's merged skills as a read-only deepagents backend (extra ``[deepagents]``).

:class:`SkillsBackend` implements deepagents' ``BackendProtocol`` over the skills the harness's
pipeline gives one user (global, markets, workspace and the user's own, merged and filtered as
in a harness turn), laid out as ``/<skill name>/SKILL.md`` plus each skill's other files. Route
it under a prefix of a ``CompositeBackend`` and name that prefix as the skills source, so
``SkillsMiddleware`` lists the skills and the agent's file tools read them::

    backend = CompositeBackend(
        default=StateBackend(),
        routes={"/skills/": SkillsBackend(harness, RuntimeContext(user_id="alice"))},
    )
    agent = create_deep_agent(model, backend=backend, skills=["/skills/"])
    await agent.ainvoke({"messages": [{"role": "user", "content": "plan my trip"}]})

Each call runs the pipeline (its warm path touches no file), so an edited skill shows on the next
call. Writes, edits and uploads are refused; deletion is not offered. The backend is
asynchronous like the harness: run the agent with ``ainvoke``/``astream`` — the synchronous
methods answer with an error saying so. Skill scripts run through the harness's own tools, not
through this backend.
"""

from __future__ import annotations

import base64

from filesystems import loose_path_parts, loose_path_problem
from harness.agent.harness import Harness
from harness.context import RuntimeContext
from harness.pipeline.plan import ResolvedSkill
from harness.tools.skills import read_skill_bytes
from repositories import RepositoryError

try:
    from deepagents.backends.protocol import (
        BackendProtocol,
        EditResult,
        FileDownloadResponse,
        FileInfo,
        FileUploadResponse,
        GlobResult,
        GrepResult,
        LsResult,
        ReadResult,
        WriteResult,
    )
    from deepagents.backends.utils import (
        InvalidGlobPatternError,
        compile_grep_include_glob,
        create_file_data,
        grep_matches_from_files,
        slice_read_response,
    )
except ImportError as exc:  # the framework is an optional extra
    raise ImportError(
        "harness.adapters.deepagents needs deepagents: pip install 'agent-skill-harness[deepagents]'"
    ) from exc

__all__ = ["SkillsBackend"]

_MAIN = "SKILL.md"
_READ_ONLY = "skill files are read-only (the harness serves them): write your file outside the skills folder"
_ASYNC_ONLY = "the harness skills backend is asynchronous: run the agent with ainvoke() or astream()"


class _Refused(Exception):
    """A path this backend does not serve; the message is what the model reads."""

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message)
        self.code = code


class SkillsBackend(BackendProtocol):
    """Read-only view of ``context``'s merged skills from ``harness`` (which must be open).

    Paths are absolute within the backend: ``/`` lists one folder per visible skill (named by
    the skill's ``name``), ``/<name>/SKILL.md`` is the verbatim main file. Another user's skill,
    a hidden skill and any path with ``..`` are "not found" or refused, never read.
    """

    def __init__(self, harness: Harness, context: RuntimeContext) -> None:
        self.harness = harness
        self.context = context

    # -- reads -----------------------------------------------------------------------------

    async def als(self, path: str) -> LsResult:
        try:
            skills = await self._skills()
            name, sub = _split(path)
            if name is None:
                return LsResult(entries=[FileInfo(path=f"/{n}/", is_dir=True) for n in sorted(skills)])
            resolved = _skill(skills, name, path)
            prefix = f"{sub}/" if sub else ""
            files = [f for f in await _files(resolved) if f.startswith(prefix)]
            if not files:
                raise _Refused(f"'{path}' is not a directory of skill {name!r}", "file_not_found")
        except _Refused as refused:
            return LsResult(error=str(refused))
        children: dict[str, FileInfo] = {}
        for file in files:
            head, _, rest = file[len(prefix) :].partition("/")
            child = f"/{name}/{prefix}{head}"
            children[child] = FileInfo(path=f"{child}/", is_dir=True) if rest else FileInfo(path=child, is_dir=False)
        return LsResult(entries=[children[k] for k in sorted(children)])

    async def aread(self, file_path: str, offset: int = 0, limit: int = 2000) -> ReadResult:
        try:
            data = await self._read(await self._skills(), file_path)
        except _Refused as refused:
            return ReadResult(error=str(refused))
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return ReadResult(file_data=create_file_data(base64.b64encode(data).decode("ascii"), encoding="base64"))
        return slice_read_response(create_file_data(text), offset, limit)

    async def adownload_files(self, paths: list[str]) -> list[FileDownloadResponse]:
        skills = await self._skills()
        responses = []
        for path in paths:
            try:
                responses.append(FileDownloadResponse(path=path, content=await self._read(skills, path)))
            except _Refused as refused:
                responses.append(FileDownloadResponse(path=path, error=refused.code))
        return responses

    async def aglob(self, pattern: str, path: str | None = None) -> GlobResult:
        try:
            matches = compile_grep_include_glob(pattern)
            found = await _under(await self._skills(), path or "/")
        except InvalidGlobPatternError as exc:
            return GlobResult(error=str(exc))
        except _Refused as refused:
            return GlobResult(error=str(refused))
        root = (path or "/").rstrip("/") + "/"
        return GlobResult(
            matches=[FileInfo(path=file, is_dir=False) for file in found if matches(file.removeprefix(root))]
        )

    async def agrep(
        self, pattern: str, path: str | None = None, glob: str | None = None, *, max_count: int | None = None
    ) -> GrepResult:
        try:
            skills = await self._skills()
            found = await _under(skills, path or "/")
            texts = {}
            for file in found:
                try:
                    texts[file] = create_file_data((await self._read(skills, file)).decode("utf-8"))
                except UnicodeDecodeError:
                    continue  # binary files have no lines to match
        except _Refused as refused:
            return GrepResult(error=str(refused))
        return grep_matches_from_files(texts, pattern, path or "/", glob, max_count=max_count)

    # -- writes are refused ----------------------------------------------------------------

    async def awrite(self, file_path: str, content: str) -> WriteResult:
        return self.write(file_path, content)

    def write(self, file_path: str, content: str) -> WriteResult:
        return WriteResult(error=_READ_ONLY)

    async def aedit(self, file_path: str, old_string: str, new_string: str, replace_all: bool = False) -> EditResult:
        return self.edit(file_path, old_string, new_string, replace_all)

    def edit(self, file_path: str, old_string: str, new_string: str, replace_all: bool = False) -> EditResult:
        return EditResult(error=_READ_ONLY)

    async def aupload_files(self, files: list[tuple[str, bytes]]) -> list[FileUploadResponse]:
        return self.upload_files(files)

    def upload_files(self, files: list[tuple[str, bytes]]) -> list[FileUploadResponse]:
        return [FileUploadResponse(path=path, error="permission_denied") for path, _ in files]

    # -- the synchronous reads cannot run the asynchronous pipeline ------------------------

    def ls(self, path: str) -> LsResult:
        return LsResult(error=_ASYNC_ONLY)

    def read(self, file_path: str, offset: int = 0, limit: int = 2000) -> ReadResult:
        return ReadResult(error=_ASYNC_ONLY)

    def glob(self, pattern: str, path: str | None = None) -> GlobResult:
        return GlobResult(error=_ASYNC_ONLY)

    def grep(
        self, pattern: str, path: str | None = None, glob: str | None = None, *, max_count: int | None = None
    ) -> GrepResult:
        return GrepResult(error=_ASYNC_ONLY)

    def download_files(self, paths: list[str]) -> list[FileDownloadResponse]:
        return [FileDownloadResponse(path=path, error=_ASYNC_ONLY) for path in paths]

    # -- helpers ---------------------------------------------------------------------------

    async def _skills(self) -> dict[str, ResolvedSkill]:
        """The user's loadable skills by name, from the pipeline's current plan."""
        plan = await self.harness.prepare(self.context)
        return {resolved.skill.name: resolved for resolved in plan.available()}

    async def _read(self, skills: dict[str, ResolvedSkill], path: str) -> bytes:
        name, sub = _split(path)
        if name is None or not sub:
            raise _Refused(f"'{path}' is a directory", "is_directory")
        resolved = _skill(skills, name, path)
        if sub not in await _files(resolved):
            raise _Refused(f"File '{path}' not found", "file_not_found")
        try:
            return await read_skill_bytes(resolved, sub)
        except (OSError, RepositoryError) as exc:  # an unreachable market fails this read, not the run
            raise _Refused(f"'{path}' could not be read: {exc}", "file_not_found") from exc


def _split(path: str) -> tuple[str | None, str]:
    """``(skill name, path inside the skill)`` of an absolute backend path; ``(None, "")`` is
    the root. A path with ``..`` or a NUL is refused."""
    relative = path.lstrip("/")
    if loose_path_problem(relative) is not None:
        raise _Refused(f"'{path}' is not a path inside the skills folder", "invalid_path")
    parts = loose_path_parts(relative)
    if not parts:
        return None, ""
    return parts[0], "/".join(parts[1:])


async def _under(skills: dict[str, ResolvedSkill], path: str) -> list[str]:
    """The absolute paths of every file at or under ``path``."""
    name, sub = _split(path)
    found = []
    for each in sorted(skills) if name is None else [name]:
        for file in await _files(_skill(skills, each, path)):
            if not sub or file == sub or file.startswith(f"{sub}/"):
                found.append(f"/{each}/{file}")
    return found


def _skill(skills: dict[str, ResolvedSkill], name: str, path: str) -> ResolvedSkill:
    resolved = skills.get(name)
    if resolved is None:
        raise _Refused(f"'{path}' not found: there is no skill {name!r}", "file_not_found")
    return resolved


async def _files(resolved: ResolvedSkill) -> list[str]:
    """A skill's files as this backend shows them: ``SKILL.md`` first, then the others."""
    try:
        files = await resolved.list_files()
    except RepositoryError as exc:  # a folder that cannot be listed fails this call, not the run
        raise _Refused(f"the files of skill {resolved.skill.name!r} cannot be listed: {exc}", "file_not_found") from exc
    return [_MAIN, *(f for f in files if f != _MAIN)]
