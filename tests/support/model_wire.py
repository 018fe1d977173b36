"""A local HTTP server that answers model API requests with canned JSON and records them."""

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


@dataclass
class WireServer:
    """Serves queued ``(status, json)`` responses in order; records every request."""

    url: str = ""
    requests: list[Recorded] = field(default_factory=list)
    responses: list[tuple[int, dict[str, Any]]] = field(default_factory=list)

    def reply(self, body: dict[str, Any], status: int = 200) -> None:
        self.responses.append((status, body))


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
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

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
