"""Spellings of "this skill's folder" in the text of public skills, resolved to a real folder.

Skill collections write the folder of a skill in several ways; each is replaced by the folder
the shell sees (the skill's files-root) in the text the harness serves:

- variables: ``${CLAUDE_SKILL_DIR}``, ``$CLAUDE_SKILL_DIR``, ``${SKILL_DIR}``, ``$SKILL_DIR``
  (the bare forms only when no letter, digit or ``_`` follows);
- template fields: ``{baseDir}``;
- prose placeholders: ``<path-to-skill>``, ``<path_to_skill>``, ``<skill-dir>``,
  ``<skill_dir>``, ``<skill-path>``, ``<skill-root>``;
- hosted folders: ``/mnt/skills/user/<name>``, ``/mnt/skills/public/<name>`` and
  ``/mnt/skills/examples/<name>``, where ``<name>`` is this skill's name or folder name and is
  followed by ``/`` or the end of the path.

Replacement is one pass, so a folder that itself looks like a placeholder stays literal.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable

__all__ = ["HOSTED_ROOTS", "SKILL_DIR_PLACEHOLDERS", "resolve_skill_dir", "skill_dir_pattern"]

#: The fixed spellings replaced by the skill's folder (the hosted forms are in :data:`HOSTED_ROOTS`).
SKILL_DIR_PLACEHOLDERS: tuple[str, ...] = (
    "${CLAUDE_SKILL_DIR}",
    "$CLAUDE_SKILL_DIR",
    "${SKILL_DIR}",
    "$SKILL_DIR",
    "{baseDir}",
    "<path-to-skill>",
    "<path_to_skill>",
    "<skill-dir>",
    "<skill_dir>",
    "<skill-path>",
    "<skill-root>",
)

#: Folders of hosted skill runtimes that hold one folder per skill, named for it.
HOSTED_ROOTS: tuple[str, ...] = ("/mnt/skills/user", "/mnt/skills/public", "/mnt/skills/examples")


def skill_dir_pattern(names: Iterable[str]) -> str:
    """The regular expression (as text, without groups) matching every spelling of the folder of
    a skill whose name and folder name are ``names`` — for a caller that resolves the folder in
    the same pass as other placeholders (:func:`harness.skills.arguments.substitute`)."""
    return _pattern(_kept(names)).pattern


def _kept(names: Iterable[str]) -> tuple[str, ...]:
    return tuple(sorted({n for n in names if n}, key=len, reverse=True))


@functools.lru_cache(maxsize=256)
def _pattern(names: tuple[str, ...]) -> re.Pattern[str]:
    # A bare variable ends where a name character would continue it (``$SKILL_DIRS`` is not one).
    fixed = [re.escape(p) + (r"(?!\w)" if p[:1] == "$" and p[1:2] != "{" else "") for p in SKILL_DIR_PLACEHOLDERS]
    hosted = "|".join(re.escape(root) for root in HOSTED_ROOTS)
    named = "|".join(re.escape(name) for name in names)
    # Longer spellings first, so one that starts another (``${SKILL_DIR}``, ``$SKILL_DIR``) wins whole.
    alternatives = sorted(fixed, key=len, reverse=True)
    if named:
        alternatives.append(rf"(?:{hosted})/(?:{named})(?=/|[\s\"'`)\]>,;:]|\Z)")
    return re.compile("|".join(alternatives))


def resolve_skill_dir(text: str, folder: str, names: Iterable[str]) -> str:
    """``text`` with every spelling of the skill's folder (see the module docstring) replaced by
    ``folder``; ``names`` are the skill's name and folder name, for the hosted forms."""
    return _pattern(_kept(names)).sub(lambda _: folder, text)
