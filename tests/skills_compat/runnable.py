"""Skills whose commands are written the ways public collections write them, and a scripted model
that runs them the way a model reading the load result would.

The shapes (the text is ours):

- ``csv-summary``: a relative script, ``python scripts/summarize.py <input.csv> <report.txt>``;
- ``bundle-maker``: module form, ``python -m scripts.package_it ...`` with ``scripts/__init__.py``
  and a sibling import (``from scripts.naming import ...``);
- ``stamp-three``: the folder as placeholders, ``${CLAUDE_SKILL_DIR}``, ``{baseDir}`` and
  ``<path-to-skill>``;
- ``word-count``: a hosted path, ``python /mnt/skills/public/word-count/scripts/count_words.py``;
- ``tally``: ``./tally.sh`` with a ``#!`` line.

Each documents its commands in the first ``sh`` fence of SKILL.md; ``<name.ext>`` arguments are
the user's files (inputs are written to the user's area first, outputs are checked there). Each
also has the same commands written the way the catalog's header shows, from the user's folder
with the skill's ``<files-root>`` (``by_root``, ``{root}`` standing for it).
"""

from __future__ import annotations

import html
import os
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from harness.models import Message, ModelReply, ToolCall
from harness.models.base import ToolSpec
from harness.pipeline.catalog import LOAD_TOOL, SHELL_TOOL
from tests.support.catalog import read_catalog

_FRONT = "---\nname: {name}\ndescription: {description}\n---\n"


@dataclass(frozen=True, kw_only=True)
class Shape:
    """One runnable skill: its files, the user's input files, the outputs its commands write, and
    those commands run from the user's folder through the skill's files-root (``{root}``)."""

    name: str
    files: dict[str, str]
    inputs: dict[str, str]
    outputs: dict[str, str]
    by_root: tuple[str, ...]
    executable: tuple[str, ...] = field(default=())


SHAPES: dict[str, Shape] = {
    "csv-summary": Shape(
        name="csv-summary",
        files={
            "SKILL.md": _FRONT.format(name="csv-summary", description="Counts the rows of a CSV file.")
            + "# CSV summary\n\nWrite a report of the rows:\n\n```sh\n"
            "python scripts/summarize.py <input.csv> <report.txt>\n```\n",
            "scripts/summarize.py": "import csv\nimport sys\n\n"
            "source, target = sys.argv[1], sys.argv[2]\n"
            "with open(source, newline='') as handle:\n    rows = list(csv.reader(handle))\n"
            "with open(target, 'w') as handle:\n    handle.write(f'rows: {len(rows) - 1}\\n')\n"
            "print('wrote', target)\n",
        },
        inputs={"input.csv": "name,score\nann,3\nbo,5\n"},
        outputs={"report.txt": "rows: 2\n"},
        by_root=("python3 {root}/scripts/summarize.py input.csv report.txt",),
    ),
    "bundle-maker": Shape(
        name="bundle-maker",
        files={
            "SKILL.md": _FRONT.format(name="bundle-maker", description="Packs a notes file.")
            + "# Bundle maker\n\nRun the packer as a module:\n\n```sh\n"
            "python -m scripts.package_it <notes.txt> <bundle.txt>\n```\n",
            "scripts/__init__.py": "",
            "scripts/naming.py": "import os\n\n\ndef label(path):\n    return 'bundle of ' + os.path.basename(path)\n",
            "scripts/package_it.py": "import sys\n\nfrom scripts.naming import label\n\n"
            "source, target = sys.argv[1], sys.argv[2]\n"
            "with open(source) as handle:\n    text = handle.read()\n"
            "with open(target, 'w') as handle:\n    handle.write(label(source) + '\\n' + text.upper())\n",
        },
        inputs={"notes.txt": "hello\n"},
        outputs={"bundle.txt": "bundle of notes.txt\nHELLO\n"},
        by_root=("PYTHONPATH={root} python3 -m scripts.package_it notes.txt bundle.txt",),
    ),
    "stamp-three": Shape(
        name="stamp-three",
        files={
            "SKILL.md": _FRONT.format(name="stamp-three", description="Stamps files three ways.")
            + "# Stamps\n\n```sh\n"
            "python ${CLAUDE_SKILL_DIR}/scripts/stamp.py <first.txt>\n"
            "python {baseDir}/scripts/stamp.py <second.txt>\n"
            "python <path-to-skill>/scripts/stamp.py <third.txt>\n```\n",
            "scripts/stamp.py": "import os\nimport sys\n\n"
            "folder = os.path.basename(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))\n"
            "with open(sys.argv[1], 'w') as handle:\n    handle.write('stamped by ' + folder + '\\n')\n",
        },
        inputs={},
        outputs={name: "stamped by stamp-three\n" for name in ("first.txt", "second.txt", "third.txt")},
        by_root=tuple(f"python3 {{root}}/scripts/stamp.py {name}.txt" for name in ("first", "second", "third")),
    ),
    "word-count": Shape(
        name="word-count",
        files={
            "SKILL.md": _FRONT.format(name="word-count", description="Counts the words of a text.")
            + "# Word count\n\n```sh\n"
            "python /mnt/skills/public/word-count/scripts/count_words.py <text.txt> <count.txt>\n```\n",
            "scripts/count_words.py": "import sys\n\n"
            "with open(sys.argv[1]) as handle:\n    words = len(handle.read().split())\n"
            "with open(sys.argv[2], 'w') as handle:\n    handle.write(f'words: {words}\\n')\n",
        },
        inputs={"text.txt": "one two three\nfour\n"},
        outputs={"count.txt": "words: 4\n"},
        by_root=("python3 {root}/scripts/count_words.py text.txt count.txt",),
    ),
    "tally": Shape(
        name="tally",
        files={
            "SKILL.md": _FRONT.format(name="tally", description="Counts the lines of a file.")
            + "# Tally\n\n```sh\n./tally.sh <lines.txt> <tally.txt>\n```\n",
            "tally.sh": '#!/bin/sh\nn=0\nwhile IFS= read -r _; do n=$((n + 1)); done < "$1"\necho "lines: $n" > "$2"\n',
        },
        inputs={"lines.txt": "a\nb\nc\n"},
        outputs={"tally.txt": "lines: 3\n"},
        by_root=("{root}/tally.sh lines.txt tally.txt",),
        executable=("tally.sh",),
    ),
}


def write_shape(root: Path, shape: Shape) -> Path:
    """``shape``'s folder at ``root/<name>`` (exec bits on its scripts)."""
    folder = root / shape.name
    for path, text in shape.files.items():
        target = folder / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    for path in shape.executable:
        os.chmod(folder / path, 0o755)
    return folder


_HEADER = re.compile(r'<skill-folder skill-id="(?P<id>[^"]+)">(?P<folder>[^<]+)</skill-folder>')
_FENCE = re.compile(r"```sh\n(?P<lines>.*?)```", re.DOTALL)
_ARGUMENT = re.compile(r"<(?P<file>[\w.-]+\.\w+)>")


@dataclass(frozen=True, kw_only=True)
class Served:
    """What a load result told the model: the skill id and folder from its header, and the
    commands documented in its body."""

    skill_id: str
    folder: str
    commands: tuple[str, ...]


def read_load_result(text: str) -> Served:
    """The header's skill id and folder and the first ``sh`` fence's command lines of ``text``."""
    header = _HEADER.search(text)
    fence = _FENCE.search(text)
    assert header is not None, f"no skill folder in the load result: {text[:300]!r}"
    assert fence is not None, f"no commands in the load result: {text[:300]!r}"
    lines = tuple(line for line in fence["lines"].splitlines() if line.strip())
    return Served(skill_id=header["id"], folder=html.unescape(header["folder"]), commands=lines)


def as_the_user_means_it(command: str) -> str:
    """``command`` with each ``<file.ext>`` argument naming the user's file in ``$OUTPUT_DIR``,
    as the load header tells the model to pass them."""
    return _ARGUMENT.sub(lambda m: f'"$OUTPUT_DIR/{m["file"]}"', command)


Step = Callable[[tuple[Message, ...], tuple[ToolSpec, ...]], ModelReply | Message | str]


def load_then_run(skill: str, seen: list[Served]) -> list[Step | Message | str]:
    """A model script: load ``skill``, run every documented command with ``skill=`` taken from
    the load result's header (one call each), then answer. ``seen`` receives what was read."""

    def run(messages: tuple[Message, ...], tools: tuple[ToolSpec, ...]) -> Message:
        served = read_load_result(messages[-1].content)
        seen.append(served)
        calls = [
            ToolCall(
                id=f"run-{i}", name=SHELL_TOOL, arguments={"command": as_the_user_means_it(c), "skill": served.skill_id}
            )
            for i, c in enumerate(served.commands)
        ]
        return Message.assistant("", calls)

    load = Message.assistant("", [ToolCall(id="load", name=LOAD_TOOL, arguments={"skillId": skill})])
    return [load, run, "done"]


@dataclass(frozen=True, kw_only=True)
class Listed:
    """What the catalog told the model of one skill: the id and files-root its entry gives."""

    skill_id: str
    files_root: str


def catalog_then_run(shape: Shape, listed: list[Listed], seen: list[Served]) -> list[Step | Message | str]:
    """A model script that takes the skill's ``<skill-id>`` and ``<files-root>`` from its entry
    in the system prompt's catalog as written (composing nothing): load the skill by that id, run
    ``shape``'s commands through that files-root from the user's folder, and its documented
    commands with ``skill=`` that id, then answer. ``listed`` and ``seen`` receive what was read."""

    def load(messages: tuple[Message, ...], tools: tuple[ToolSpec, ...]) -> Message:
        system = messages[0].content
        block = re.search(r"<available_skills>.*</available_skills>", system, re.DOTALL)
        assert block is not None, "no catalog in the system prompt"
        catalog = read_catalog(block[0])
        assert catalog.explicit, "the catalog gave no explicit entries"
        entry = catalog.by_name[shape.name]
        assert entry.files_root is not None, f"the catalog gave {shape.name} no files-root"
        listed.append(Listed(skill_id=entry.skill_id, files_root=entry.files_root))
        return Message.assistant("", [ToolCall(id="load", name=LOAD_TOOL, arguments={"skillId": entry.skill_id})])

    def run(messages: tuple[Message, ...], tools: tuple[ToolSpec, ...]) -> Message:
        served = read_load_result(messages[-1].content)
        seen.append(served)
        (entry,) = listed
        by_root = [c.format(root=shlex.quote(entry.files_root)) for c in shape.by_root]
        documented = [as_the_user_means_it(c) for c in served.commands]
        calls = [ToolCall(id=f"root-{i}", name=SHELL_TOOL, arguments={"command": c}) for i, c in enumerate(by_root)]
        calls += [
            ToolCall(id=f"run-{i}", name=SHELL_TOOL, arguments={"command": c, "skill": entry.skill_id})
            for i, c in enumerate(documented)
        ]
        return Message.assistant("", calls)

    return [load, run, "done"]
