"""Claude Code's skill fields and the placeholders of an explicitly invoked skill's body.

The placeholders are Claude Code's own (its ``argumentSubstitution``): ``$ARGUMENTS`` is the
argument text exactly as typed; ``$ARGUMENTS[N]`` the N-th argument, 0-based, and ``$N``
shorthand for it; arguments are split shell-style (quotes group words and are removed) and at
whitespace when the quoting does not balance. ``$name`` is the argument at the position of
``name`` in the ``arguments:`` frontmatter list (names made only of digits are dropped from the
list, as they would clash with ``$N``; ``$name[`` and ``$names`` are not ``$name``).
``${CLAUDE_SKILL_DIR}`` and ``${CLAUDE_SESSION_ID}`` are the skill's folder and the session; given
the folder the shell sees, the other spellings of it (:mod:`harness.skills.placeholders`) are
replaced in the same pass. A missing argument is the empty string. Substitution is one pass over
the body alone, so an argument that itself spells a placeholder (``$1``, ``${CLAUDE_SKILL_DIR}``,
``{baseDir}`` ...) reaches the model exactly as typed. When the body uses no argument
placeholder and arguments were given, ``ARGUMENTS: <text>`` is appended.

A body may repeat a placeholder many times, so the text a command may insert is bounded: the
argument text is at most :data:`MAX_ARGUMENTS` characters, and the expansion at most
:data:`MAX_EXPANDED` characters beyond the body itself; past either, :class:`ArgumentsTooLarge`
is raised before the oversized text is built.
"""

from __future__ import annotations

import functools
import re
import shlex
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from harness.errors import SkillError

__all__ = [
    "CLAUDE_CODE_FIELDS",
    "MAX_ARGUMENTS",
    "MAX_EXPANDED",
    "ArgumentsTooLarge",
    "allowed_tools",
    "argument_hint",
    "argument_names",
    "split_arguments",
    "substitute",
    "text_field",
    "user_invocable",
]

#: Frontmatter fields of Claude Code skills the harness reads (outside the Agent Skills spec).
CLAUDE_CODE_FIELDS = frozenset(
    {"when_to_use", "argument-hint", "arguments", "user-invocable", "model", "context", "agent"}
)

#: The most characters of argument text one skill command takes.
MAX_ARGUMENTS = 64 * 1024
#: The most characters a command's placeholders may add to the skill's body.
MAX_EXPANDED = 256 * 1024


class ArgumentsTooLarge(SkillError, ValueError):
    """A skill command's arguments, or the body they expand to, are over the limits."""


_ENV = r"\$\{(?P<env>CLAUDE_SKILL_DIR|CLAUDE_SESSION_ID)\}"
_INDEXED = r"\$ARGUMENTS\[(?P<index>\d+)\]|\$(?P<position>\d+)(?!\w)|\$(?P<all>ARGUMENTS)"


@functools.lru_cache(maxsize=256)
def _placeholders(names: tuple[str, ...], folder_names: tuple[str, ...] | None) -> re.Pattern[str]:
    """Every placeholder in one alternation, named arguments before ``$ARGUMENTS`` as Claude
    Code replaces them first (a name is not matched when a word character or ``[`` follows),
    then, given ``folder_names``, the other spellings of the skill's folder."""
    from harness.skills.placeholders import skill_dir_pattern  # loaded by the first invoked skill, not the import

    named = "|".join(re.escape(name) for name in names if name)
    folder = [] if folder_names is None else [f"(?P<folder>{skill_dir_pattern(folder_names)})"]
    return re.compile("|".join([_ENV, *([rf"\$(?P<name>{named})(?![\[\w])"] if named else []), _INDEXED, *folder]))


def text_field(fields: Mapping[str, Any], key: str) -> str:
    """A frontmatter text field, stripped (``""`` when missing or not text)."""
    value = fields.get(key)
    return value.strip() if isinstance(value, str) else ""


def argument_hint(fields: Mapping[str, Any]) -> str:
    """``argument-hint``: what to type after ``/skill:<name>`` (``""`` when not given)."""
    return text_field(fields, "argument-hint")


def user_invocable(fields: Mapping[str, Any]) -> bool:
    """``user-invocable``: false keeps the skill out of ``/skill:`` commands (default true)."""
    return fields.get("user-invocable") is not False


def argument_names(fields: Mapping[str, Any]) -> tuple[str, ...]:
    """The names of the ``arguments:`` list (a list of names, or a space-separated string);
    entries given as mappings use their ``name``; names of digits only are left out."""
    value = fields.get("arguments")
    items: list[Any] = value.split() if isinstance(value, str) else value if isinstance(value, list) else []
    names = (item.get("name") if isinstance(item, dict) else item for item in items)
    # A name of digits only would shadow $N: Claude Code drops it, and the names after it move up.
    return tuple(
        name.strip() for name in names if isinstance(name, str) and name.strip() and not name.strip().isdigit()
    )


def allowed_tools(fields: Mapping[str, Any]) -> tuple[str, ...] | None:
    """``allowed-tools`` as tool names (``Bash(git:*)`` gives ``Bash``); ``None`` when not given.

    The specification writes a space-separated string; Claude Code also accepts commas and lists.
    """
    value = fields.get("allowed-tools")
    if isinstance(value, str):
        items = re.findall(r"[^\s,(]+(?:\([^)]*\))?", value)
    elif isinstance(value, list):
        items = [item for item in value if isinstance(item, str)]
    else:
        return None
    return tuple(item.split("(", 1)[0].strip() for item in items if item.strip())


def split_arguments(text: str) -> list[str]:
    """Arguments split shell-style (quotes group words); on bad quoting, at whitespace."""
    try:
        return shlex.split(text)
    except ValueError:
        return text.split()


def substitute(
    body: str,
    arguments: str,
    *,
    names: Sequence[str] = (),
    skill_dir: str = "",
    session_id: str = "",
    folder: str | None = None,
    folder_names: Iterable[str] = (),
) -> str:
    """``body`` with every placeholder replaced in one pass (see the module docstring):
    ``${CLAUDE_SKILL_DIR}`` by ``skill_dir`` and, when ``folder`` is given, the other spellings
    of the folder of the skill named ``folder_names`` (its name and folder name) by ``folder``.

    Raises :class:`ArgumentsTooLarge` when ``arguments`` is longer than :data:`MAX_ARGUMENTS`
    or the placeholders would add more than :data:`MAX_EXPANDED` characters.
    """
    if len(arguments) > MAX_ARGUMENTS:
        raise ArgumentsTooLarge(
            f"the arguments are {len(arguments)} characters, over the {MAX_ARGUMENTS}-character limit; "
            "pass a file path or a shorter text instead"
        )
    values = split_arguments(arguments)
    named: dict[str, int] = {}
    for index, name in enumerate(names):
        named.setdefault(name, index)
    used_arguments = False
    added = 0

    def positional(index: int) -> str:
        return values[index] if index < len(values) else ""

    def value(match: re.Match[str]) -> str:
        nonlocal used_arguments
        if match["env"]:
            return skill_dir if match["env"] == "CLAUDE_SKILL_DIR" else session_id
        used_arguments = True
        if match["all"]:
            return arguments
        name = match.groupdict().get("name")
        if name is not None:
            return positional(named[name])
        return positional(int(match["index"] or match["position"]))

    def replace(match: re.Match[str]) -> str:
        nonlocal added
        if folder is not None and match["folder"] is not None:
            return folder  # the body's own text, as the load tool would serve it
        text = value(match)
        added += len(text)
        if added > MAX_EXPANDED:  # stop before the whole expansion is built
            raise ArgumentsTooLarge(
                f"the skill's placeholders would add more than {MAX_EXPANDED} characters to its body "
                f"(the body repeats them); pass shorter arguments"
            )
        return text

    spelled = None if folder is None else tuple(sorted({n for n in folder_names if n}))
    result = _placeholders(tuple(names), spelled).sub(replace, body)
    if arguments and not used_arguments:
        result = f"{result.rstrip()}\n\nARGUMENTS: {arguments}"
    return result
