"""Time the Python peers' skill loading in their own interpreter (the peers venv).

    bench/.peers/venv/bin/python bench/peers/py_peers.py {deepagents,skills-ref} SKILLS_DIR [--runs N]

After one untimed run (lazy imports), each run discovers, parses and renders every skill under SKILLS_DIR from scratch, the way the
peer does it before a conversation; the script prints one JSON object: the peer, its version,
the median wall time in milliseconds, how many skills were rendered and the prompt's length.

- deepagents: a fresh ``SkillsMiddleware`` over a ``FilesystemBackend`` rooted at the skills
  folder's parent; ``before_agent`` lists and parses the skills, ``modify_request`` renders them
  into the system message (a model request with a fake chat model, nothing is called).
- skills-ref: the skill folders of SKILLS_DIR (those with a SKILL.md), then ``to_prompt``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path
from typing import Any


def deepagents_loader(skills_dir: Path) -> Callable[[], tuple[int, str]]:
    """One cold deepagents load: list + parse in ``before_agent``, render in ``modify_request``."""
    from deepagents.backends.filesystem import FilesystemBackend
    from deepagents.middleware.skills import SkillsMiddleware
    from langchain.agents.middleware.types import ModelRequest
    from langchain_core.language_models.fake_chat_models import FakeListChatModel
    from langchain_core.messages import SystemMessage

    model = FakeListChatModel(responses=["-"])
    source = f"/{skills_dir.name}/"

    def load() -> tuple[int, str]:
        middleware: Any = SkillsMiddleware(backend=FilesystemBackend(root_dir=skills_dir.parent), sources=[source])
        update = middleware.before_agent({}, None, {})
        request = ModelRequest(
            model=model, messages=[], system_message=SystemMessage(content="You are a helpful agent."), state=update
        )
        prompt = middleware.modify_request(request).system_message.text
        return len(update["skills_metadata"]), prompt

    return load


def skills_ref_loader(skills_dir: Path) -> Callable[[], tuple[int, str]]:
    """One cold skills-ref load: find the skill folders, then ``to_prompt`` reads and renders them."""
    from skills_ref import to_prompt

    def load() -> tuple[int, str]:
        folders = sorted(p for p in skills_dir.iterdir() if (p / "SKILL.md").is_file())
        return len(folders), to_prompt(folders)

    return load


PEERS = {
    "deepagents": ("deepagents", deepagents_loader),
    "skills-ref": ("skills-ref", skills_ref_loader),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("peer", choices=sorted(PEERS))
    parser.add_argument("skills_dir", type=Path)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    distribution, make_loader = PEERS[args.peer]
    load = make_loader(args.skills_dir.resolve())
    load()  # untimed: lazy imports and first-use caches of the interpreter
    samples = []
    for _ in range(args.runs):
        start = time.perf_counter()
        count, prompt = load()
        samples.append((time.perf_counter() - start) * 1000)
    print(
        json.dumps(
            {
                "peer": args.peer,
                "version": version(distribution),
                "median_ms": statistics.median(samples),
                "runs": args.runs,
                "skills": count,
                "prompt_chars": len(prompt),
            }
        )
    )


if __name__ == "__main__":
    main()
