"""A local HTTP stand-in for the two Nacos 3.x endpoints ``nacos-sdk-python`` 3.2 calls when it
downloads skills, and skill packages laid out the way the SDK builds them.

What the SDK sends (read from its source, ``v2/nacos/...``):

- ``ai/remote/ai_http_client_proxy.py``, ``AiHttpClientProxy.download_skill_zip`` →
  ``_req_api_bytes`` → ``_call_server_bytes``: ``GET {context}/v3/client/ai/skills``
  (``AIConstants.SKILL_DOWNLOAD_PATH``; context ``/nacos`` by default, ``ClientConfig.
  build_context_prefix``) with the query ``namespaceId`` (``public`` when none is set), ``name``
  and, when given, ``version`` and ``label``; headers from ``_build_headers``: the
  ``accessToken`` header when the client logs in, ``Spas-AccessKey``/``Spas-Signature`` when it
  has access keys. The answer is the ZIP's bytes with status 200; any other status is an error,
  404 meaning "skill not found" (``NacosException`` with ``NOT_FOUND``). A 200 body is checked
  by ``ai/util/skill_util.py`` (``validate_zip_bytes``, ``validate_zip_entry_paths``).
- ``transport/auth_client.py``, ``AuthClient.get_access_token`` (started by
  ``transport/nacos_server_connector.py`` when ``username``/``password`` are configured):
  ``POST {context}/v1/auth/users/login`` with ``username`` and ``password`` in the query string
  (``transport/http_agent.py``, ``HttpAgent.request``), expecting JSON with ``accessToken`` and
  ``tokenTtl``.

Packages follow ``ai/util/skill_util.py``, ``to_zip_bytes``: ``<name>/SKILL.md`` and the other
files below ``<name>/``. The stand-in answers nothing else (the SDK's gRPC side is never used
for downloads) and records every request it gets.
"""

from __future__ import annotations

import io
import json
import socket
import stat
import threading
import zipfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

__all__ = ["NacosStandIn", "Request", "running_stand_in", "skill_zip", "zip_entries"]

SKILLS_PATH = "/nacos/v3/client/ai/skills"
LOGIN_PATH = "/nacos/v1/auth/users/login"


@dataclass(frozen=True)
class Request:
    """One request the stand-in received."""

    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]


@dataclass
class _Skill:
    versions: dict[str, bytes] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)
    latest: str = ""


class NacosStandIn:
    """Skills by namespace and name, each with versions and labels, served over HTTP.

    ``publish(name, zip, version=, labels=)`` adds a version (the newest is ``latest``);
    ``users`` turns on login (``{"nacos": "secret"}``): downloads then need the token. With
    ``declare_length = False`` bodies are sent without ``Content-Length`` (ended by closing).
    """

    def __init__(self, users: Mapping[str, str] | None = None) -> None:
        self.users = dict(users or {})
        self.token = "stand-in-token"
        self.declare_length = True
        self.requests: list[Request] = []
        self._skills: dict[tuple[str, str], _Skill] = {}
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._held: socket.socket | None = None  # the stopped server's port, bound but not listening
        self._thread: threading.Thread | None = None
        self.port = 0

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def publish(
        self, name: str, package: bytes, *, version: str = "1", labels: tuple[str, ...] = (), namespace: str = "public"
    ) -> None:
        with self._lock:
            skill = self._skills.setdefault((namespace, name), _Skill())
            skill.versions[version] = package
            skill.latest = version
            for label in labels:
                skill.labels[label] = version

    def downloads(self, name: str | None = None) -> list[Request]:
        """The download requests received (for ``name`` only, when given)."""
        with self._lock:
            return [r for r in self.requests if r.path == SKILLS_PATH and (name is None or r.query.get("name") == name)]

    def start(self, port: int = 0) -> None:
        if self._held is not None:
            self._held.close()
            self._held = None
        self._server = ThreadingHTTPServer(("127.0.0.1", port), self._handler())
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), name="nacos-stand-in", daemon=True
        )
        self._thread.start()

    def stop(self, *, hold_port: bool = False) -> None:
        """A real outage: the port stops listening. With ``hold_port`` it stays bound (without
        listening) until :meth:`start` or the next :meth:`stop`, so no other server on the
        machine can take it meanwhile and answer in the stopped server's place."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self._held is not None:
            self._held.close()
            self._held = None
        if hold_port:
            self._held = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            self._held.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            self._held.bind(("127.0.0.1", self.port))

    def answer(self, method: str, url: str, headers: Mapping[str, str]) -> tuple[int, str, bytes]:
        parts = urlsplit(url)
        query = {k: v[-1] for k, v in parse_qs(parts.query, keep_blank_values=True).items()}
        with self._lock:
            self.requests.append(Request(method, parts.path, query, dict(headers)))
        if method == "POST" and parts.path == LOGIN_PATH:
            if self.users and self.users.get(query.get("username", "")) == query.get("password"):
                body = {"accessToken": self.token, "tokenTtl": 18000, "globalAdmin": False}
                return 200, "application/json", json.dumps(body).encode()
            return 403, "text/plain", b"unknown user"
        if method == "GET" and parts.path == SKILLS_PATH:
            if self.users and headers.get("accessToken") != self.token:
                return 403, "text/plain", b"authorization failed"
            return self._package(query)
        return 404, "text/plain", b"no such endpoint"

    def _package(self, query: Mapping[str, str]) -> tuple[int, str, bytes]:
        with self._lock:
            skill = self._skills.get((query.get("namespaceId", ""), query.get("name", "")))
            if skill is None:
                return 404, "text/plain", b"skill not found"
            version = query.get("version") or skill.labels.get(query.get("label", ""), "")
            if not version and not query.get("label"):
                version = skill.latest
            package = skill.versions.get(version)
        if package is None:
            return 404, "text/plain", b"version or label not found"
        return 200, "application/zip", package

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            def _reply(self) -> None:
                status, kind, body = stand_in.answer(self.command, self.path, dict(self.headers.items()))
                self.send_response(status)
                self.send_header("Content-Type", kind)
                if stand_in.declare_length:
                    self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = _reply
            do_POST = _reply

            def log_message(self, format: str, *args: object) -> None:
                pass

        return Handler


@contextmanager
def running_stand_in(users: Mapping[str, str] | None = None) -> Iterator[NacosStandIn]:
    stand_in = NacosStandIn(users)
    stand_in.start()
    try:
        yield stand_in
    finally:
        stand_in.stop()


def zip_entries(entries: Mapping[str, bytes | tuple[bytes, int]]) -> bytes:
    """A ZIP of raw ``entries`` (``path -> bytes`` or ``(bytes, st_mode)``), names as given."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path, value in entries.items():
            data, mode = value if isinstance(value, tuple) else (value, stat.S_IFREG | 0o644)
            info = zipfile.ZipInfo(path, date_time=(2025, 1, 1, 0, 0, 0))
            info.create_system = 3
            info.external_attr = mode << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, data)
    return buffer.getvalue()


def skill_zip(name: str, skill_md: bytes, files: Mapping[str, bytes | tuple[bytes, int]] | None = None) -> bytes:
    """A package as the SDK's ``to_zip_bytes`` lays it out: ``<name>/SKILL.md`` and ``<name>/<path>``.

    A file given as ``(bytes, permission bits)`` keeps those bits as a regular file's mode.
    """
    entries: dict[str, bytes | tuple[bytes, int]] = {f"{name}/SKILL.md": skill_md}
    for path, value in (files or {}).items():
        entries[f"{name}/{path}"] = (value[0], stat.S_IFREG | value[1]) if isinstance(value, tuple) else value
    return zip_entries(entries)
