"""A custom skill market: subclass ``SkillRepository`` to serve skills from a Python dict.

A market implements three primitives — ``_version`` (a cheap change token), ``_load`` (the
bundles at that version) and ``_read_files`` (file bytes on demand) — and the base class adds
caching, error handling and the public API. ``DictRepository`` below serves
``{folder: {path: text}}``; the agent then uses its ``fortune`` skill in one turn with the
offline ``DemoModel``.

Run::

    python examples/custom_repository.py [WORKDIR]

Without WORKDIR a temporary folder is used.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from _workdir import run_in_workdir

from harness import DemoModel, Harness, RuntimeContext
from repositories import BundleFile, BundleNotFound, SkillBundle, SkillRepository, Snapshot

SKILLS = {
    "fortune": {
        "SKILL.md": (
            "---\nname: fortune\ndescription: Use when the user wants a fortune cookie message.\n---\n\n"
            "Crack a cookie:\n\n```bash\npython3 scripts/fortune.py\n```\n"
        ),
        "scripts/fortune.py": "print('Fortune from the dict market: a clean diff brings good luck.')\n",
    }
}


class DictRepository(SkillRepository):
    """Read-only skills held in a dict of ``{folder: {relative path: text}}``."""

    def __init__(self, skills: dict[str, dict[str, str]], *, source: str = "dict") -> None:
        super().__init__(source=source)
        self._skills = skills

    async def _version(self) -> str:
        return hashlib.sha256(json.dumps(self._skills, sort_keys=True).encode()).hexdigest()

    async def _load(self, version: str) -> Snapshot:
        bundles = []
        for folder in sorted(self._skills):
            files = self._skills[folder]
            digest = hashlib.sha256(json.dumps(files, sort_keys=True).encode()).hexdigest()
            bundles.append(
                SkillBundle(
                    folder=folder,
                    skill_md=files["SKILL.md"].encode(),
                    skill_md_name="SKILL.md",
                    files=tuple(
                        BundleFile(
                            path=path, size=len(text.encode()), mode=0o755 if path.startswith("scripts/") else 0o644
                        )
                        for path, text in sorted(files.items())
                        if path != "SKILL.md"
                    ),
                    location=f"dict:{folder}",
                    digest=digest,
                )
            )
        return Snapshot(version=version, bundles=tuple(bundles))

    async def _read_files(self, folder: str, paths: tuple[str, ...]) -> dict[str, bytes]:
        files = self._skills.get(folder, {})
        missing = [path for path in paths if path not in files]
        if missing:
            raise BundleNotFound(f"{self.source}: {folder}/{missing[0]} does not exist")
        return {path: files[path].encode() for path in paths}


async def main(workdir: Path) -> None:
    async with Harness(
        name="fortune-teller",
        model=DemoModel(),
        workspace=workdir / "workspace",
        repositories=[DictRepository(SKILLS)],
    ) as agent:
        result = await agent.run("I would like a fortune cookie message.", context=RuntimeContext(user_id="carol"))
    print(result.reply)


if __name__ == "__main__":
    run_in_workdir(main)
