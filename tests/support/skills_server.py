"""A conforming MCP Skills server for the market's tests, built on the SDK's low-level server.

Run by path over stdio (``python tests/support/skills_server.py ROOT``); :class:`SkillsServer`
lays out ``ROOT`` and reads back what the server was asked. The server serves every folder of
``ROOT/tree`` that holds a ``SKILL.md``, at the folder's path (``tree/team-a/dupe`` is
``skill://team-a/dupe/SKILL.md``), and re-reads the tree and ``ROOT/config.json`` on every
request, so a test changes what is served between two calls. The configuration can:

- ``page_size``: entries per ``skills/list`` page (default 2, so a host must follow ``nextCursor``);
- ``lies``: ``{file URI: digest}`` listed instead of the file's real digest;
- ``dynamic``: skill paths listed with ``"resources": "dynamic"``;
- ``unlisted``: skill paths left out of ``skills/list`` (``skills/get`` still answers for them);
- ``frontmatter``: ``{skill path: {field: value}}`` merged into the entry's frontmatter only;
- ``directory_read``: whether ``resources/directory/read`` is declared (``directoryRead``) and
  answered (default true; read when the server starts). It lists a folder's direct children,
  ``page_size`` a page, with their sizes; ``children``: ``{directory URI: [child...]}`` added to
  that folder's answer as given (a hostile server's entries).

Every request is appended to ``ROOT/requests.jsonl`` (``{"method", "uri"}``) before it is
answered, so tests count what a host asked for.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

__all__ = ["SkillsServer"]

_MAIN = "SKILL.md"


class SkillsServer:
    """``ROOT`` of one test server: its tree, its configuration and its request log."""

    def __init__(self, root: Path, *, instructions: str = "") -> None:
        self.root = root
        self.tree = root / "tree"
        self.tree.mkdir(parents=True, exist_ok=True)
        self.instructions = instructions
        self.configure()

    @property
    def command(self) -> list[str]:
        """The argv that serves ``ROOT`` over stdio."""
        argv = [sys.executable, str(Path(__file__).resolve()), str(self.root)]
        return [*argv, self.instructions] if self.instructions else argv

    def add(self, path: str, files: Mapping[str, bytes | str]) -> None:
        """Serve the skill at ``path`` with ``files`` (relative path → content), replacing it."""
        folder = self.tree / path
        for old in sorted(folder.rglob("*"), reverse=True) if folder.exists() else ():
            old.unlink() if old.is_file() else old.rmdir()
        for relative, data in files.items():
            target = folder / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data.encode() if isinstance(data, str) else data)

    def configure(self, **config: Any) -> None:
        """Replace the configuration (see the module docstring)."""
        (self.root / "config.json").write_text(json.dumps(config))

    def requests(self) -> list[tuple[str, str]]:
        """Every request so far as ``(method, uri)`` (``uri`` empty when it has none)."""
        log = self.root / "requests.jsonl"
        if not log.exists():
            return []
        return [(item["method"], item["uri"]) for item in map(json.loads, log.read_text().splitlines())]

    def count(self, method: str) -> int:
        """How many requests of ``method`` were made so far."""
        return sum(1 for asked, _ in self.requests() if asked == method)

    def reads(self) -> list[str]:
        """The URIs read with ``resources/read`` so far, in order."""
        return [uri for method, uri in self.requests() if method == "resources/read"]


# -- the server (runs in its own process) -------------------------------------------------------


def _digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _skills(tree: Path) -> Iterator[tuple[str, Path]]:
    for main in sorted(tree.rglob(_MAIN)):
        yield main.parent.relative_to(tree).as_posix(), main.parent


def _frontmatter(data: bytes) -> dict[str, Any]:
    import yaml

    text = data.decode()
    _, head, _ = text.split("---\n", 2)
    loaded = yaml.safe_load(head)
    return loaded if isinstance(loaded, dict) else {}


def _entry(path: str, folder: Path, config: dict[str, Any]) -> dict[str, Any]:
    uri = f"skill://{path}/{_MAIN}"
    frontmatter = {**_frontmatter((folder / _MAIN).read_bytes()), **config.get("frontmatter", {}).get(path, {})}
    if path in config.get("dynamic", []):
        return {"uri": uri, "frontmatter": frontmatter, "resources": "dynamic"}
    lies = config.get("lies", {})
    resources = []
    for file in sorted(p for p in folder.rglob("*") if p.is_file()):
        file_uri = f"skill://{path}/{file.relative_to(folder).as_posix()}"
        data = file.read_bytes()
        resources.append({"uri": file_uri, "digest": lies.get(file_uri, _digest(data)), "size": len(data)})
    return {"uri": uri, "frontmatter": frontmatter, "resources": resources}


def main(root: Path, instructions: str) -> None:
    import anyio
    import mcp_types as types
    from mcp.server import Server, ServerRequestContext
    from mcp.server.stdio import stdio_server
    from mcp.shared.exceptions import MCPError
    from pydantic import BaseModel

    tree = root / "tree"

    def config() -> dict[str, Any]:
        loaded: dict[str, Any] = json.loads((root / "config.json").read_text())
        return loaded

    def note(method: str, uri: str = "") -> None:
        with (root / "requests.jsonl").open("a") as log:
            log.write(json.dumps({"method": method, "uri": uri}) + "\n")

    def invalid(message: str) -> MCPError:
        return MCPError(code=types.INVALID_PARAMS, message=message)

    class UriParams(BaseModel):
        uri: str

    class DirectoryParams(UriParams):
        cursor: str | None = None

    async def skills_list(ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams) -> dict[str, Any]:
        note("skills/list", params.cursor or "")
        settings = config()
        entries = [_entry(p, f, settings) for p, f in _skills(tree) if p not in settings.get("unlisted", [])]
        start, size = int(params.cursor or 0), int(settings.get("page_size", 2))
        page: dict[str, Any] = {"skills": entries[start : start + size], "ttlMs": 0, "cacheScope": "private"}
        if start + size < len(entries):
            page["nextCursor"] = str(start + size)
        return page

    async def directory_read(ctx: ServerRequestContext[Any, Any], params: DirectoryParams) -> dict[str, Any]:
        note("resources/directory/read", params.uri)
        relative = params.uri.removeprefix("skill://")
        folder = tree / relative
        if relative == params.uri or ".." in relative.split("/") or not folder.is_dir():
            raise invalid(f"{params.uri} is not a directory resource")
        settings = config()
        children: list[dict[str, Any]] = [
            {"uri": f"{params.uri}/{child.name}", "name": child.name, "mimeType": "inode/directory"}
            if child.is_dir()
            else {"uri": f"{params.uri}/{child.name}", "name": child.name, "size": child.stat().st_size}
            for child in sorted(folder.iterdir())
        ]
        children += settings.get("children", {}).get(params.uri, [])
        start, size = int(params.cursor or 0), int(settings.get("page_size", 2))
        page: dict[str, Any] = {"resources": children[start : start + size]}
        if start + size < len(children):
            page["nextCursor"] = str(start + size)
        return page

    async def skills_get(ctx: ServerRequestContext[Any, Any], params: UriParams) -> dict[str, Any]:
        note("skills/get", params.uri)
        for path, folder in _skills(tree):
            if params.uri == f"skill://{path}/{_MAIN}":
                return {"skill": _entry(path, folder, config()), "ttlMs": 0, "cacheScope": "private"}
        raise invalid(f"No skill is served at {params.uri}")

    async def read(
        ctx: ServerRequestContext[Any, Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        note("resources/read", params.uri)
        relative = params.uri.removeprefix("skill://")
        file = tree / relative
        if relative == params.uri or ".." in relative.split("/") or not file.is_file():
            raise invalid(f"no resource {params.uri}")
        content = types.BlobResourceContents(
            uri=params.uri, blob=__import__("base64").b64encode(file.read_bytes()).decode()
        )
        return types.ReadResourceResult(contents=[content])

    async def resources(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        note("resources/list")
        return types.ListResourcesResult(resources=[])

    server: Server[Any] = Server(
        "skills-test", instructions=instructions or None, on_read_resource=read, on_list_resources=resources
    )
    directories = config().get("directory_read", True)
    server.extensions["io.modelcontextprotocol/skills"] = {"directoryRead": True} if directories else {}
    server.add_request_handler("skills/list", types.PaginatedRequestParams, skills_list)
    server.add_request_handler("skills/get", UriParams, skills_get)
    if directories:
        server.add_request_handler("resources/directory/read", DirectoryParams, directory_read)

    async def serve() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    anyio.run(serve)


if __name__ == "__main__":
    # Run by path, this folder comes first on sys.path, and its mcp.py would shadow the SDK.
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
    main(Path(sys.argv[1]), sys.argv[2] if len(sys.argv) > 2 else "")
