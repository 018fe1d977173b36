"""A well-known skills site in a folder, served over HTTP on 127.0.0.1 for the tests, with the
tricks a hostile server plays on chosen paths (lying lengths, redirects, trickled bytes, answers
held back)."""

from __future__ import annotations

import functools
import hashlib
import http.server
import io
import json
import tarfile
import threading
import time
import zipfile
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

__all__ = ["SCHEMA", "Site", "Trick", "lying_length", "redirect", "serve", "tar_gz", "trickle", "zipped"]

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


Trick = Callable[[http.server.BaseHTTPRequestHandler], None]
"""How a hostile server answers one path: it writes the whole response itself."""

# The longest a trick keeps a connection: it bounds a test that fails, never one that passes.
_TRICK_CAP = 30.0


class _Quiet(http.server.SimpleHTTPRequestHandler):
    tricks: Mapping[str, Trick] = {}

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        trick = self.tricks.get(self.path.split("?", 1)[0])
        if trick is None:
            super().do_GET()
        else:
            self.close_connection = True
            trick(self)


def lying_length(data: bytes, declared: int) -> Trick:
    """Answer ``data`` under a ``Content-Length`` of ``declared``, then close."""

    def trick(handler: http.server.BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Length", str(declared))
        handler.end_headers()
        handler.wfile.write(data)

    return trick


def redirect(location: str, code: int = 302) -> Trick:
    """Redirect to ``location``."""

    def trick(handler: http.server.BaseHTTPRequestHandler) -> None:
        handler.send_response(code)
        handler.send_header("Location", location)
        handler.send_header("Content-Length", "0")
        handler.end_headers()

    return trick


def trickle(
    data: bytes,
    *,
    every: float = 0.1,
    release: threading.Event | None = None,
    asked: threading.Event | None = None,
    finished: threading.Event | None = None,
) -> Trick:
    """A slowloris: answer one header byte every ``every`` seconds until ``release`` is set (or
    :data:`_TRICK_CAP` seconds passed, or the client went away), then the rest of ``data``'s
    answer at once. ``asked`` is set when the request arrives, ``finished`` when the trick ends."""

    def trick(handler: http.server.BaseHTTPRequestHandler) -> None:
        if asked is not None:
            asked.set()
        stream = handler.wfile
        try:
            stream.write(b"HTTP/1.1 200 OK\r\nX-Slow: ")
            until = time.monotonic() + _TRICK_CAP
            while time.monotonic() < until and not (release is not None and release.is_set()):
                stream.write(b"z")
                stream.flush()
                time.sleep(every)
            stream.write(f"\r\nContent-Length: {len(data)}\r\n\r\n".encode() + data)
        except OSError:
            pass  # the client gave up
        finally:
            if finished is not None:
                finished.set()

    return trick


@contextmanager
def serve(root: Path, *, tricks: Mapping[str, Trick] | None = None) -> Iterator[str]:
    """Serve ``root`` on a free port of 127.0.0.1, answering the paths of ``tricks`` with them
    (a dict the test may change while serving); yields ``http://127.0.0.1:<port>``."""
    handler_class = type("_Handler", (_Quiet,), {"tricks": tricks if tricks is not None else {}})
    handler = functools.partial(handler_class, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
