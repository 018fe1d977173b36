"""Bounded HTTP GETs for a market that fetches over plain HTTP(S) (the well-known index).

:func:`http_get` holds a server to three bounds whatever it sends:

- **time**: the whole request — connecting, the TLS handshake, every redirect, the headers and
  the body — ends within ``timeout`` seconds. A socket timeout alone bounds only each read, so a
  server that trickles a byte now and then (a slowloris) could hold a request for hours; here a
  timer shuts the request's sockets down when its time is up;
- **size**: a body is read no further than ``limit`` bytes (a larger ``Content-Length`` is
  refused before the body is read), and a body shorter than its ``Content-Length`` is refused as
  incomplete;
- **place**: a redirect is followed only when the caller's ``redirect_problem`` finds nothing
  wrong with its target (any other scheme, ``file://`` included, is refused by that rule too).

Every failure is an :class:`HttpFailure` whose message says what went wrong, without the URL
(the caller names it, credentials masked).
"""

from __future__ import annotations

import contextlib
import http.client
import socket
import threading
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import IO, Any

from filesystems import redact_url

__all__ = ["HttpFailure", "http_get"]

_CHUNK = 64 * 1024


class HttpFailure(Exception):
    """A GET that did not give the whole body (the message says why)."""


def http_get(
    url: str, *, limit: int, timeout: float, redirect_problem: Callable[[str], str | None], user_agent: str
) -> bytes:
    """The body at ``url``: at most ``limit`` bytes, within ``timeout`` seconds in all, redirects
    followed only where ``redirect_problem(target)`` is ``None``. Raises :class:`HttpFailure`."""
    deadline = _Deadline(timeout)
    opener = urllib.request.build_opener(
        _Redirects(redirect_problem), _PlainHandler(deadline), _SecureHandler(deadline)
    )
    request = urllib.request.Request(url, headers={"User-Agent": user_agent})
    with deadline:
        try:
            with opener.open(request, timeout=timeout) as response:
                declared = response.headers.get("Content-Length")
                expected = int(declared) if declared is not None and declared.strip().isdigit() else None
                if expected is not None and expected > limit:
                    raise HttpFailure(f"it is larger than {limit} bytes (Content-Length {expected})")
                data = _read(response, limit)
        except HttpFailure:
            raise
        except urllib.error.HTTPError as exc:
            exc.close()  # it holds the answer's connection
            raise HttpFailure(f"HTTP {exc.code} {exc.reason}") from None
        except (OSError, ValueError, http.client.HTTPException) as exc:  # URLError is an OSError
            if deadline.expired:
                raise HttpFailure(deadline.message) from None
            reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
            raise HttpFailure(f"cannot read it: {reason or type(exc).__name__}") from None
    if deadline.expired:
        raise HttpFailure(deadline.message)
    if len(data) > limit:
        raise HttpFailure(f"it is larger than {limit} bytes")
    if expected is not None and len(data) < expected:
        raise HttpFailure(f"the answer ended after {len(data)} of the {expected} bytes its Content-Length announced")
    return data


def _read(response: IO[bytes], limit: int) -> bytes:
    """The body, read until its end or one byte past ``limit``."""
    pieces: list[bytes] = []
    size = 0
    while size <= limit:
        piece = response.read(min(_CHUNK, limit + 1 - size))
        if not piece:
            break
        pieces.append(piece)
        size += len(piece)
    return b"".join(pieces)


class _Deadline:
    """Shuts the sockets of one request down once ``seconds`` have passed (a context manager
    that starts and stops the timer)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.expired = False
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True

    @property
    def message(self) -> str:
        return f"it took longer than {self.seconds:g}s (timeout)"

    def __enter__(self) -> _Deadline:
        self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._timer.cancel()

    def watch(self, sock: socket.socket) -> None:
        with self._lock:
            self._sockets.append(sock)
            expired = self.expired
        if expired:
            _shut(sock)

    def _expire(self) -> None:
        with self._lock:
            self.expired = True
            sockets = list(self._sockets)
        for sock in sockets:
            _shut(sock)


def _shut(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


class _PlainConnection(http.client.HTTPConnection):
    """A connection whose socket its request's deadline watches from the moment it connects."""

    deadline: _Deadline | None = None

    def connect(self) -> None:
        super().connect()
        if self.deadline is not None:
            self.deadline.watch(self.sock)


class _SecureConnection(http.client.HTTPSConnection, _PlainConnection):
    """An HTTPS connection: its plain socket is watched before the TLS handshake (the
    handshake's ``super().connect()`` is :class:`_PlainConnection`'s)."""


def _connection(kind: type[_PlainConnection], deadline: _Deadline) -> Callable[..., http.client.HTTPConnection]:
    def connect(host: str, **options: Any) -> http.client.HTTPConnection:
        connection = kind(host, **options)
        connection.deadline = deadline
        return connection

    return connect


class _PlainHandler(urllib.request.HTTPHandler):
    def __init__(self, deadline: _Deadline) -> None:
        super().__init__()
        self._deadline = deadline

    def do_open(self, http_class: Any, req: urllib.request.Request, **options: Any) -> http.client.HTTPResponse:
        return super().do_open(_connection(_PlainConnection, self._deadline), req, **options)


class _SecureHandler(urllib.request.HTTPSHandler):
    def __init__(self, deadline: _Deadline) -> None:
        super().__init__()
        self._deadline = deadline

    def do_open(self, http_class: Any, req: urllib.request.Request, **options: Any) -> http.client.HTTPResponse:
        return super().do_open(_connection(_SecureConnection, self._deadline), req, **options)


class _Redirects(urllib.request.HTTPRedirectHandler):
    """Follows a redirect only where the caller's rule allows."""

    def __init__(self, problem: Callable[[str], str | None]) -> None:
        super().__init__()
        self._problem = problem

    def redirect_request(
        self, req: urllib.request.Request, fp: IO[bytes], code: int, msg: str, headers: Any, newurl: str
    ) -> urllib.request.Request | None:
        problem = self._problem(newurl)
        if problem is not None:
            fp.close()
            raise HttpFailure(f"redirect to {redact_url(newurl)!r} refused: {problem}")
        return super().redirect_request(req, fp, code, msg, headers, newurl)
