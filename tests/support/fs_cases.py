"""The filesystem conformance cases: a filesystem under test and how a peer process opens it."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from filesystems import AbstractFilesystem

PEER = Path(__file__).parents[1] / "filesystems" / "peer.py"


@dataclass
class Case:
    """A filesystem under test and how another process can open the same one (``spec``)."""

    name: str
    fs: AbstractFilesystem
    spec: dict[str, str] | None = None
    host_root: Path | None = None
    extra: dict[str, object] = field(default_factory=dict)

    def peer(self, *args: str) -> subprocess.Popen[str]:
        """Start ``peer.py`` on the same filesystem in another process."""
        assert self.spec is not None
        return subprocess.Popen(
            [sys.executable, str(PEER), json.dumps(self.spec), *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )


def peer_result(process: subprocess.Popen[str], timeout: float = 60) -> str:
    out, err = process.communicate(timeout=timeout)
    assert process.returncode == 0, err
    return out.strip()
