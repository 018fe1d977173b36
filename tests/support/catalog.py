"""Read a rendered ``<available_skills>`` block back the way its header tells the model to: an
explicit entry gives its ``<skill-id>`` and ``<files-root>``; in a group of the compact form a
skill's id is ``<name>_<source of its group>`` and its files-root ``<root>/<folder or name>``.

The block is parsed with a real XML parser, so a test that reads a catalog also proves that the
block is well-formed and its text escaped.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass, field

__all__ = ["CatalogSkill", "ReadCatalog", "files_root_in", "read_catalog"]


@dataclass(frozen=True, kw_only=True)
class CatalogSkill:
    """One skill as the model derives it from the catalog (``description`` ``None``: named only)."""

    name: str
    skill_id: str
    files_root: str | None
    description: str | None
    workflow: bool = False


@dataclass(kw_only=True)
class ReadCatalog:
    """What a catalog shows: its skills in the order shown, the ``<shadowed>`` ids and the
    ``<more>`` count; ``explicit`` when its skills are explicit entries (not groups)."""

    header: str
    explicit: bool = False
    skills: list[CatalogSkill] = field(default_factory=list)
    shadowed: list[str] = field(default_factory=list)
    more: int = 0

    @property
    def by_name(self) -> dict[str, CatalogSkill]:
        return {s.name: s for s in self.skills}

    @property
    def described(self) -> dict[str, str]:
        """Name -> description of the skills shown with one."""
        return {s.name: s.description for s in self.skills if s.description is not None}

    @property
    def named(self) -> list[str]:
        """The names of the skills shown without a description."""
        return [s.name for s in self.skills if s.description is None]


def read_catalog(text: str) -> ReadCatalog:
    """Parse ``text`` (header plus ``<available_skills>``); raises ``ElementTree.ParseError``
    when the block is not well-formed XML."""
    header, _, rest = text.partition("<available_skills>")
    root = ElementTree.fromstring(f"<available_skills>{rest}")
    read = ReadCatalog(header=header)
    for child in root:
        if child.tag == "skill":
            read.skills.append(_explicit(child))
        elif child.tag == "skills":
            _read_group(child, read)
        elif child.tag == "shadowed":
            read.shadowed = (child.text or "").split(", ")
        elif child.tag == "more":
            read.more = int(child.attrib["count"])
            assert re.fullmatch(rf"{read.more} (more )?skills (are )?not listed for space.*", child.text or "")
        else:
            raise AssertionError(f"unexpected element <{child.tag}> in the catalog")
    kinds = {child.tag for child in root} & {"skill", "skills"}
    assert len(kinds) <= 1, "a catalog mixes explicit entries and groups"
    read.explicit = kinds == {"skill"}
    return read


def _explicit(entry: ElementTree.Element) -> CatalogSkill:
    """An explicit entry: name, description, skill-id and (where rendered) files-root, in that order."""
    tags = [child.tag for child in entry]
    assert tags in (["name", "description", "skill-id"], ["name", "description", "skill-id", "files-root"]), tags
    assert set(entry.attrib) <= {"workflow"}, entry.attrib
    root = entry.find("files-root")
    return CatalogSkill(
        name=entry.findtext("name", ""),
        skill_id=entry.findtext("skill-id", ""),
        files_root=None if root is None else root.text,
        description=entry.findtext("description", ""),
        workflow=entry.attrib.get("workflow") == "true",
    )


def _read_group(group: ElementTree.Element, read: ReadCatalog) -> None:
    source, root = group.attrib["source"], group.attrib.get("root")
    for child in group:
        if child.tag == "skill-names":
            for name in (child.text or "").split(", "):
                read.skills.append(_skill(name, name, source, root, None, False))
            continue
        assert child.tag == "skill", child.tag
        name = child.attrib["name"]
        folder = child.attrib.get("folder", name)
        # A description is never empty, so a skill without text is one shown by name only.
        read.skills.append(_skill(name, folder, source, root, child.text, child.attrib.get("workflow") == "true"))


def _skill(
    name: str, folder: str, source: str, root: str | None, description: str | None, workflow: bool
) -> CatalogSkill:
    return CatalogSkill(
        name=name,
        skill_id=f"{name}_{source}",
        files_root=f"{root}/{folder}" if root else None,
        description=description,
        workflow=workflow,
    )


def files_root_in(text: str, name: str) -> str:
    """The files-root the catalog inside ``text`` (a system prompt, an adapter's instructions)
    shows for the skill ``name``, as a model derives it; fails the test when it shows none."""
    block = re.search(r"<available_skills>.*?</available_skills>", text, re.DOTALL)
    assert block is not None, "no catalog in the text"
    root = read_catalog(block[0]).by_name[name].files_root
    assert root is not None, f"the catalog shows no files-root for {name}"
    return root
