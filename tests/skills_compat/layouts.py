"""Skill folders laid out the way public skill collections are: nested folders, scripts started
with ``python``, binary assets and dot-files."""

from __future__ import annotations

import os
from pathlib import Path

#: Bytes that are not UTF-8 (a binary asset such as an image or a font).
BINARY = bytes(range(256)) * 4

SKILL_MD = """---
name: {name}
description: {description}
---
Run `python scripts/report.py` from this folder.
"""

REPORT_PY = """import sys
print("report from", sys.argv[0].rsplit("/", 1)[-1], sys.version_info.major)
"""


def public_skill(root: Path, name: str, description: str = "Makes a report with a Python script.") -> Path:
    """One skill as public collections publish it, at ``root/name``."""
    folder = root / name
    (folder / "scripts" / "lib").mkdir(parents=True, exist_ok=True)
    (folder / "assets").mkdir(exist_ok=True)
    (folder / "SKILL.md").write_text(SKILL_MD.format(name=name, description=description))
    (folder / "scripts" / "report.py").write_text(REPORT_PY)
    (folder / "scripts" / "lib" / "helpers.py").write_text("VALUE = 42\n")
    run = folder / "scripts" / "run.sh"
    run.write_text('#!/bin/sh\nexec python "$(dirname "$0")/report.py"\n')
    os.chmod(run, 0o755)
    (folder / "assets" / "logo.bin").write_bytes(BINARY)
    (folder / ".gitignore").write_text("__pycache__/\n")
    return folder
