"""One factory for skill folders and SKILL.md text, used by every test that needs a skill."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from repositories import FileContents, SkillBundleContents

__all__ = ["make_bundle", "make_skill", "skill_md"]


def skill_md(name: str, description: str | None = None, *, extra: str = "", body: str | None = None) -> str:
    """SKILL.md text naming ``name``: the description defaults to ``Use for <name> tasks.``, ``extra``
    is more frontmatter (whole lines), the body defaults to a ``# <name>`` heading."""
    description = description or f"Use for {name} tasks."
    body = f"# {name}\n" if body is None else body
    return f"---\nname: {name}\ndescription: {description}\n{extra}---\n{body}"


def make_skill(
    root: Path,
    folder: str,
    *,
    name: str | None = None,
    description: str | None = None,
    extra: str = "",
    body: str | None = None,
    text: str | bytes | None = None,
    files: Mapping[str, str | bytes] | None = None,
    executable: Iterable[str] = (),
) -> Path:
    """Write ``root/folder/SKILL.md`` and ``files`` (relative path -> content); returns the folder.

    The main file is ``text`` as given, else :func:`skill_md` for ``name`` (default: the folder's
    last segment). Paths in ``executable`` get mode 0755.
    """
    target = root / folder
    target.mkdir(parents=True, exist_ok=True)
    main = skill_md(name or folder.rsplit("/", 1)[-1], description, extra=extra, body=body) if text is None else text
    for path, content in {"SKILL.md": main, **(files or {})}.items():
        file = target / path
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_bytes(_bytes(content))
    for path in executable:
        (target / path).chmod(0o755)
    return target


def make_bundle(
    folder: str,
    *,
    description: str | None = None,
    extra: str = "",
    body: str | None = None,
    text: str | bytes | None = None,
    files: Mapping[str, str | bytes | tuple[str | bytes, int]] | None = None,
) -> SkillBundleContents:
    """The market bundle of :func:`make_skill`'s folder: ``files`` map paths to content or to
    ``(content, mode)`` (default mode 0644)."""
    main = skill_md(folder, description, extra=extra, body=body) if text is None else text
    contents = []
    for path, given in (files or {}).items():
        data, mode = given if isinstance(given, tuple) else (given, 0o644)
        contents.append(FileContents(path=path, data=_bytes(data), mode=mode))
    return SkillBundleContents(folder=folder, skill_md=_bytes(main), files=tuple(contents))


def served_body(text: str) -> str:
    """What a skill load result serves after its header (the skill's folder and how to run it)."""
    _, blank, body = text.partition("\n\n")
    assert blank, f"a load result starts with a header and a blank line: {text[:200]!r}"
    return body


def _bytes(content: str | bytes) -> bytes:
    return content.encode() if isinstance(content, str) else content
