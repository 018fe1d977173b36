"""A local HTTP server that answers model API requests with canned JSON or server-sent events
and records them."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Recorded:
    """One request the server received."""

    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


@dataclass(frozen=True)
class SSE:
    """A streamed response: each ``(event name or None, data)`` is sent as one server-sent
    event and flushed on its own (``data`` a JSON value, or a raw string such as ``[DONE]``)."""

    events: list[tuple[str | None, Any]]

    def frames(self) -> list[bytes]:
        frames = []
        for name, data in self.events:
            line = data if isinstance(data, str) else json.dumps(data)
            frames.append((f"event: {name}\n" if name else "").encode() + f"data: {line}\n\n".encode())
        return frames


@dataclass
class WireServer:
    """Serves queued ``(status, json)`` or streamed responses in order; records every request."""

    url: str = ""
    requests: list[Recorded] = field(default_factory=list)
    responses: list[tuple[int, dict[str, Any] | SSE]] = field(default_factory=list)

    def reply(self, body: dict[str, Any], status: int = 200) -> None:
        self.responses.append((status, body))

    def stream(self, events: list[tuple[str | None, Any]]) -> None:
        """Queue a ``text/event-stream`` response of ``events`` (see :class:`SSE`)."""
        self.responses.append((200, SSE(events)))


def _handler(server: WireServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's naming
            length = int(self.headers.get("Content-Length", "0"))
            body = json.loads(self.rfile.read(length) or b"{}")
            server.requests.append(
                Recorded(
                    method="POST",
                    path=self.path,
                    headers={k.lower(): v for k, v in self.headers.items()},
                    body=body,
                )
            )
            if server.responses:
                status, payload = server.responses.pop(0)
            else:
                status, payload = 500, {"error": {"message": "no canned response left"}}
            if isinstance(payload, SSE):
                self._send_events(payload)
                return
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _send_events(self, sse: SSE) -> None:
            # No Content-Length: the stream ends when the connection closes (HTTP/1.0).
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            for frame in sse.frames():
                self.wfile.write(frame)
                self.wfile.flush()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


@contextmanager
def serving() -> Iterator[WireServer]:
    """Run a ``WireServer`` on a free local port for the duration of the block."""
    server = WireServer()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(server))
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    server.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    try:
        yield server
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()
