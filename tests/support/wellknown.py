"""A well-known skills site in a folder, served over HTTP on 127.0.0.1 for the tests."""

from __future__ import annotations

import functools
import hashlib
import http.server
import io
import json
import tarfile
import threading
import zipfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

__all__ = ["SCHEMA", "Site", "serve", "tar_gz", "zipped"]

SCHEMA = "https://schemas.agentskills.io/discovery/0.2.0/schema.json"


def tar_gz(files: Mapping[str, bytes | tuple[bytes, int]], *, links: Mapping[str, str] | None = None) -> bytes:
    """A gzip-compressed tar of ``files`` (path → bytes, or (bytes, mode)) and symlinks."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        for path, given in files.items():
            data, mode = given if isinstance(given, tuple) else (given, 0o644)
            info = tarfile.TarInfo(path)
            info.size, info.mode = len(data), mode
            tar.addfile(info, io.BytesIO(data))
        for path, target in (links or {}).items():
            info = tarfile.TarInfo(path)
            info.type, info.linkname = tarfile.SYMTYPE, target
            tar.addfile(info)
    return out.getvalue()


def zipped(files: Mapping[str, bytes]) -> bytes:
    """A ZIP archive of ``files``."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for path, data in files.items():
            archive.writestr(path, data)
    return out.getvalue()


class Site:
    """A site folder with ``/.well-known/agent-skills/index.json`` and its artifacts."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.folder = root / ".well-known" / "agent-skills"
        self.folder.mkdir(parents=True, exist_ok=True)
        self.entries: list[dict[str, object]] = []

    def add(
        self, name: str, data: bytes, *, kind: str = "skill-md", digest: str | None = None, url: str | None = None
    ) -> None:
        """Publish an artifact under the index folder and list it (``digest`` may lie)."""
        relative = url or (f"{name}/SKILL.md" if kind == "skill-md" else f"{name}.tar.gz")
        if url is None or not url.startswith(("/", "http", "file:")):
            target = self.folder / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        self.entries = [e for e in self.entries if e["name"] != name]
        self.entries.append(
            {
                "name": name,
                "type": kind,
                "description": f"the {name} skill",
                "url": relative,
                "digest": digest or "sha256:" + hashlib.sha256(data).hexdigest(),
            }
        )
        self.write()

    def remove(self, name: str) -> None:
        self.entries = [e for e in self.entries if e["name"] != name]
        self.write()

    def write(self, schema: str | None = SCHEMA) -> None:
        index: dict[str, object] = {"skills": self.entries}
        if schema is not None:
            index["$schema"] = schema
        (self.folder / "index.json").write_text(json.dumps(index))


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@contextmanager
def serve(root: Path) -> Iterator[str]:
    """Serve ``root`` on a free port of 127.0.0.1; yields ``http://127.0.0.1:<port>``."""
    handler = functools.partial(_Quiet, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
