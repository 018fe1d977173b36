"""Generated skill collections shaped like the public ones: long prose SKILL.md files (10–20 KB),
scripts, references and a few assets per skill. The text is made up here from a word list, so
the scanner sees the shapes it meets in practice (headings, lists, code fences, command lines)
without any real collection's content.

``make_collections(root)`` writes five collection folders (177 skills, 1,940 files in all) and
returns their paths; ``make_git_remotes(root)`` turns each into a bare repository with one
commit and returns the ``file://`` URLs.
"""

from __future__ import annotations

import os
import random
import subprocess
from pathlib import Path

__all__ = ["COLLECTIONS", "make_collections", "make_git_remotes", "skill_prose"]

# (name, skills, files including each SKILL.md): 177 skills and 1,940 files in all.
COLLECTIONS: tuple[tuple[str, int, int], ...] = (
    ("office-docs", 17, 560),
    ("engineering", 52, 430),
    ("data-science", 38, 400),
    ("writing-kit", 44, 290),
    ("ops-toolbox", 26, 260),
)

_NOUNS = (
    "report table chart module request response schema record field column header section draft "
    "summary change release branch commit test fixture dataset sample metric threshold template "
    "slide document sheet paragraph citation figure caption outline checklist reviewer workflow "
    "config option parameter endpoint payload token cache index query result error warning"
).split()
_VERBS = (
    "read check write update compare collect render format validate review parse convert list "
    "split merge sort filter group count describe explain record keep rename archive publish"
).split()
_ADJ = "new old large small clear short long shared local remote empty final first last careful".split()
_LINKS = "Then, Before that, After each step, If the input is large, When in doubt, Finally,".split(", ")
_COMMANDS = (
    "python3 scripts/{s}.py --input {n}.json --output out/{n}.md",
    "bash scripts/{s}.sh {n}",
    "git diff --stat HEAD~1",
    "git log --oneline -n 20",
    "npm run build -- --mode production",
    "pip install -r requirements.txt",
    "curl -s https://api.example.org/v1/{n}s | jq '.items[]'",
    "jq -r '.{n}' data/{n}.json",
    "pandoc references/{n}.md -o build/{n}.docx",
    "rg -n 'TODO' src/",
    "ls -la assets/",
    "wc -l references/*.md",
)


def _sentence(rng: random.Random) -> str:
    words = [rng.choice(_VERBS).capitalize(), "the", rng.choice(_ADJ), rng.choice(_NOUNS)]
    for _ in range(rng.randint(1, 3)):
        words += [rng.choice(("and", "then", "with", "for", "from", "into")), "the", rng.choice(_NOUNS)]
    return " ".join(words) + rng.choice((".", ".", ".", ";", ":")).replace(";", ".").replace(":", ".")


def _paragraph(rng: random.Random) -> str:
    parts = [_sentence(rng) for _ in range(rng.randint(3, 7))]
    parts[rng.randrange(len(parts))] = f"{rng.choice(_LINKS)} {parts[-1].lower()}"
    return " ".join(parts)


def _command(rng: random.Random) -> str:
    return rng.choice(_COMMANDS).format(s=rng.choice(_VERBS), n=rng.choice(_NOUNS))


def skill_prose(rng: random.Random, size: int) -> str:
    """Markdown of about ``size`` characters: headings, paragraphs, lists, code fences, tables."""
    out: list[str] = []
    length = 0
    while length < size:
        kind = rng.random()
        if kind < 0.12:
            block = f"## {rng.choice(_VERBS).capitalize()} the {rng.choice(_NOUNS)}s"
        elif kind < 0.55:
            block = _paragraph(rng)
        elif kind < 0.75:
            block = "\n".join(f"- {_sentence(rng)}" for _ in range(rng.randint(2, 6)))
        elif kind < 0.9:
            block = "```bash\n" + "\n".join(_command(rng) for _ in range(rng.randint(1, 4))) + "\n```"
        else:
            rows = [f"| {rng.choice(_NOUNS)} | {rng.choice(_VERBS)} | {rng.randint(1, 500)} |" for _ in range(4)]
            block = "| item | action | limit |\n|---|---|---|\n" + "\n".join(rows)
        out.append(block)
        length += len(block) + 2
    return "\n\n".join(out) + "\n"


def _script(rng: random.Random, suffix: str, size: int) -> str:
    if suffix == ".sh":
        lines = ["#!/usr/bin/env bash", "set -euo pipefail", ""]
        while sum(map(len, lines)) < size:
            lines.append(f'echo "{_sentence(rng)}"')
            lines.append(_command(rng))
        return "\n".join(lines) + "\n"
    lines = ["#!/usr/bin/env python3", f'"""{_sentence(rng)}"""', "", "import json", "import sys", ""]
    index = 0
    while sum(map(len, lines)) < size:
        index += 1
        noun = rng.choice(_NOUNS)
        lines += [
            f"def {rng.choice(_VERBS)}_{noun}_{index}(items):",
            f'    """{_sentence(rng)}"""',
            f"    return [item for item in items if item.get('{noun}') is not None]",
            "",
        ]
    lines += ["", "if __name__ == '__main__':", "    print(json.dumps(sys.argv[1:]))"]
    return "\n".join(lines) + "\n"


def _other_file(rng: random.Random, index: int) -> tuple[str, bytes, int]:
    """One file of a skill besides SKILL.md: (relative path, bytes, mode)."""
    kind = rng.random()
    noun = rng.choice(_NOUNS)
    if kind < 0.2:
        suffix = rng.choice((".py", ".py", ".sh"))
        return f"scripts/{noun}_{index}{suffix}", _script(rng, suffix, rng.randint(1000, 5000)).encode(), 0o755
    if kind < 0.45:
        return f"references/{noun}-{index}.md", skill_prose(rng, rng.randint(1500, 6000)).encode(), 0o644
    if kind < 0.85:  # the many small files: templates, settings, examples
        fields = ", ".join(f'"{rng.choice(_NOUNS)}": {rng.randint(0, 99)}' for _ in range(rng.randint(4, 40)))
        return f"assets/{noun}-{index}.json", ("{" + fields + "}\n").encode(), 0o644
    if kind < 0.95:
        body = "\n".join(f'  <{noun} id="{i}">{_sentence(rng)}</{noun}>' for i in range(rng.randint(10, 60)))
        return f"assets/{noun}-{index}.xml", f"<root>\n{body}\n</root>\n".encode(), 0o644
    png = b"\x89PNG\r\n\x1a\n" + rng.randbytes(rng.randint(2000, 20000))
    return f"assets/{noun}-{index}.png", png, 0o644


def _write_collection(root: Path, name: str, skills: int, files: int, rng: random.Random) -> None:
    others = files - skills
    counts = [others // skills] * skills
    for extra in range(others - sum(counts)):
        counts[extra % skills] += 1
    for number, count in enumerate(counts):
        skill = f"{name}-{rng.choice(_VERBS)}-{number:03d}"
        folder = root / "skills" / skill
        folder.mkdir(parents=True)
        description = f"Use when the user asks to {rng.choice(_VERBS)} {rng.choice(_NOUNS)}s; {_sentence(rng)}"
        front = f"---\nname: {skill}\ndescription: {description}\nlicense: Apache-2.0\n---\n\n# {skill}\n\n"
        (folder / "SKILL.md").write_text(front + skill_prose(rng, rng.randint(10_000, 20_000)))
        for index in range(count):
            path, data, mode = _other_file(rng, index)
            target = folder / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
            target.chmod(mode)


def make_collections(root: Path, *, seed: int = 29) -> list[Path]:
    """The five collections of :data:`COLLECTIONS` as folders under ``root`` (each with a
    ``skills/`` folder of skill folders); the same ``seed`` writes the same bytes."""
    rng = random.Random(seed)
    folders = []
    for name, skills, files in COLLECTIONS:
        _write_collection(root / name, name, skills, files, rng)
        folders.append(root / name)
    return folders


def make_git_remotes(root: Path, *, seed: int = 29) -> list[str]:
    """:func:`make_collections` under ``root/work``, each committed once and pushed to a bare
    repository ``root/<name>.git``; returns their ``file://`` URLs."""
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "bench",
        "GIT_AUTHOR_EMAIL": "bench@example.org",
        "GIT_COMMITTER_NAME": "bench",
        "GIT_COMMITTER_EMAIL": "bench@example.org",
    }
    urls = []
    for work in make_collections(root / "work", seed=seed):
        bare = root / f"{work.name}.git"

        def git(*args: str, cwd: Path = work) -> None:
            subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True)

        git("init", "-q", "-b", "main")
        git("add", "-A")
        git("commit", "-q", "-m", "skills")
        git("init", "-q", "--bare", "-b", "main", str(bare), cwd=root)
        git("push", "-q", str(bare), "HEAD:refs/heads/main")
        urls.append(bare.as_uri())
    return urls
