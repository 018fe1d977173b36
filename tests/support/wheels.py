"""Tiny wheels written by hand (a zip with a module, METADATA, WHEEL and RECORD), so
environment builds run with ``--no-index --find-links <folder>`` and never touch a network; a
source distribution whose build code leaves a mark, and a PEP 503 index folder to serve;
and :class:`WheelIndex`, a wheel folder served on 127.0.0.1 as a page of links, which can
hold back the download of chosen wheels until the test lets them go."""

from __future__ import annotations

import base64
import hashlib
import html
import http.server
import io
import re
import shutil
import tarfile
import threading
import zipfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Self

__all__ = ["WHEELS", "WheelIndex", "write_index", "write_sdist", "write_wheel", "write_wheelhouse"]

#: The wheels the environment tests install: distribution -> (version, import name). ``PyYAML``
#: stands in for the real one (its module says which it is), so inference can be shown offline.
WHEELS: dict[str, tuple[str, str]] = {
    "hxpdf": ("1.2", "hxpdf"),
    "hxsheet": ("2.0", "hxsheet"),
    "hxprose": ("0.3", "hxprose"),
    "PyYAML": ("6.0", "yaml"),
}


def _record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def write_wheel(
    folder: Path,
    name: str,
    version: str,
    module: str,
    *,
    requires: Iterable[str] = (),
    scripts: Mapping[str, str] | None = None,
) -> Path:
    """Write ``<name>-<version>-py3-none-any.whl`` into ``folder``: ``module/__init__.py`` sets
    ``VALUE = "<name> <version>"`` and ``main()`` prints it; ``requires`` become its
    ``Requires-Dist``, ``scripts`` (command -> ``module:function``) its console scripts. Returns
    its path."""
    dist = f"{name.replace('-', '_')}-{version}.dist-info"
    metadata = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
    metadata += "".join(f"Requires-Dist: {r}\n" for r in requires)
    files = {
        f"{module}/__init__.py": f"VALUE = {f'{name} {version}'!r}\n\n\ndef main():\n    print(VALUE)\n".encode(),
        f"{dist}/METADATA": metadata.encode(),
        f"{dist}/WHEEL": b"Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    if scripts:
        lines = "".join(f"{command} = {target}\n" for command, target in scripts.items())
        files[f"{dist}/entry_points.txt"] = f"[console_scripts]\n{lines}".encode()
    record = "".join(f"{path},{_record_hash(data)},{len(data)}\n" for path, data in files.items())
    target = folder / f"{name.replace('-', '_')}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(target, "w") as wheel:
        for path, data in files.items():
            wheel.writestr(path, data)
        wheel.writestr(f"{dist}/RECORD", record + f"{dist}/RECORD,,\n")
    return target


def write_wheelhouse(folder: Path) -> Path:
    """A folder holding every wheel of :data:`WHEELS`."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, (version, module) in WHEELS.items():
        write_wheel(folder, name, version, module)
    return folder


def write_sdist(folder: Path, name: str, version: str, marker: Path) -> Path:
    """Write ``<name>-<version>.tar.gz`` into ``folder``: a source distribution with no wheel
    whose in-tree build backend writes ``marker`` as soon as an installer loads it (build code
    running), then builds nothing. Returns its path."""
    base = f"{name}-{version}"
    files = {
        "pyproject.toml": (
            '[build-system]\nrequires = []\nbuild-backend = "backend"\nbackend-path = ["."]\n\n'
            f'[project]\nname = "{name}"\nversion = "{version}"\n'
        ),
        "PKG-INFO": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        "backend.py": (
            f"import pathlib\n\npathlib.Path({str(marker)!r}).write_text('build code ran')\n\n\n"
            "def build_wheel(*args, **kwargs):\n    raise SystemExit('this backend builds nothing')\n"
        ),
    }
    target = folder / f"{base}.tar.gz"
    with tarfile.open(target, "w:gz") as archive:
        for path, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(f"{base}/{path}")
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return target


def write_index(folder: Path, distributions: Iterable[Path]) -> Path:
    """A PEP 503 "simple" index in ``folder`` (serve ``folder``, point uv at ``<url>/simple``)
    holding copies of ``distributions`` (wheels or source archives); returns ``folder``."""
    for path in distributions:
        name = re.sub(r"[-_.]+", "-", path.name.split("-", 1)[0]).lower()
        project = folder / "simple" / name
        project.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, project / path.name)
        links = "".join(
            f'<a href="{p.name}">{p.name}</a>\n' for p in sorted(project.iterdir()) if p.name != "index.html"
        )
        (project / "index.html").write_text(f"<!DOCTYPE html>\n<html><body>\n{links}</body></html>\n")
    return folder


class WheelIndex:
    """The wheels of ``folder`` served on 127.0.0.1 while the ``with`` block runs: ``url`` is a
    page linking every wheel (what ``find_links`` takes). A wheel whose distribution is
    :meth:`held` is not served until :meth:`release`; ``asked`` lists the wheels requested so far."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.asked: list[str] = []
        self._held: set[str] = set()
        self._released = threading.Event()
        index = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (the http.server name)
                self._answer(body=True)

            def do_HEAD(self) -> None:  # noqa: N802
                self._answer(body=False)

            def _answer(self, *, body: bool) -> None:
                name = self.path.strip("/")
                if not name:
                    links = "".join(
                        f'<a href="{html.escape(p.name)}">{html.escape(p.name)}</a>\n' for p in index.wheels()
                    )
                    return self._send(f"<html><body>\n{links}</body></html>\n".encode(), "text/html", body)
                wheel = index.folder / name
                if "/" in name or not wheel.is_file():
                    return self.send_error(404)
                if body:
                    index.asked.append(name)
                    if name.partition("-")[0].lower() in index._held:
                        index._released.wait(timeout=300)
                return self._send(wheel.read_bytes(), "application/octet-stream", body)

            def _send(self, data: bytes, kind: str, body: bool) -> None:
                self.send_response(200)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if body:
                    self.wfile.write(data)

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002 (the base's name)
                pass

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/"

    def wheels(self) -> list[Path]:
        return sorted(self.folder.glob("*.whl"))

    def hold(self, *distributions: str) -> None:
        """Hold back the wheels of ``distributions`` until :meth:`release`."""
        self._held.update(d.lower() for d in distributions)
        self._released.clear()

    def release(self) -> None:
        self._released.set()

    def __enter__(self) -> Self:
        threading.Thread(target=self._server.serve_forever, name="wheel-index", daemon=True).start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self.release()
        self._server.shutdown()
        self._server.server_close()
