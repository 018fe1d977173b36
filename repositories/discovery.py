"""Finding skill folders in a tree: the one discovery rule set of every layer and market.

A folder holding a ``SKILL.md`` (or ``skill.md``) is a skill; everything below it belongs to that
skill, nested ``SKILL.md`` files, dot-files and ``_`` files included. Folders without one are
searched deeper, dot-folders included. The rules, shared by folder layers, markets and
``harness skills validate``:

- VCS metadata (``.git``, ``.hg``, ``.svn``), ``node_modules`` and ``__pycache__`` are never
  entered, and what a ``.gitignore`` or ``.ignore`` in the tree excludes is left out.
- The machine-owned names (``_drafts``, ``.archive``, ``.reviews``, ``.audit``, ``.curator``,
  ``.usage.json``) are reserved at the top level of a tree only, and never served.
- Links to folders on the way to a skill, and a skill folder that is a link, are followed only
  when the caller says so (the operator's own layers), deduplicated by the folder they lead to;
  otherwise each is reported and skipped. Links inside a skill folder are always reported and
  skipped.
- An entry whose name is not valid UTF-8, a folder that cannot be listed and a ``SKILL.md``
  that is a folder are reported; an unreadable folder costs only the skill it lies in.
- A ``SKILL.md`` at the top of a tree that also holds skills, and loose ``*.md`` files there, are
  reported and do not hide the skills below.

Backends describe their tree through one callback, ``list_dir(node) -> list[Child]``, called once
per folder (it may raise ``OSError``: below the root that is a problem, at the root it
propagates), and optionally ``read(node) -> bytes`` for ignore files.
"""

from __future__ import annotations

import functools
import hashlib
import operator
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Generic, NamedTuple, TypeVar

from filesystems.paths import VCS_FOLDERS, has_control, has_dot_segment, loose_path_parts
from repositories.errors import InvalidBundle, UnsafePath

__all__ = [
    "DIR",
    "FILE",
    "IGNORE_FILES",
    "OTHER",
    "RESERVED_NAMES",
    "SKILL_MD_NAMES",
    "SYMLINK",
    "Child",
    "Discovery",
    "Entry",
    "SkillLayout",
    "check_folder",
    "complete_layout",
    "discover",
    "find_skills",
    "normalise_file_path",
    "shown",
    "tree_from_paths",
    "undecodable",
]

SKILL_MD_NAMES = ("SKILL.md", "skill.md")
"""Accepted names of a skill's main file, preferred first."""

RESERVED_NAMES = frozenset({"_drafts", ".archive", ".reviews", ".audit", ".curator", ".usage.json"})
"""Machine-owned entries of a skills folder: reserved at a tree's top level, never a skill."""


def check_folder(folder: str) -> str:
    """Return ``folder`` if it is a safe, visible single path segment, else raise ``InvalidBundle``."""
    if (
        not isinstance(folder, str)
        or not folder
        or len(folder.encode()) > 255
        or folder.startswith(".")
        or folder in RESERVED_NAMES
        or "/" in folder
        or "\\" in folder
        or has_control(folder)
    ):
        raise InvalidBundle(
            f"invalid skill folder name {folder!r}: it must be one path segment that does not "
            f"start with '.', is not a reserved name ({', '.join(sorted(RESERVED_NAMES))}), without '/', '\\' or "
            "control characters"
        )
    return folder


def normalise_file_path(path: str) -> str:
    """Return ``path`` as a clean relative POSIX path inside a skill folder.

    ``.`` segments and repeated slashes are dropped. Raises ``UnsafePath`` for absolute paths,
    ``..`` segments, backslashes, NUL/control characters, empty paths and VCS metadata (``.git``,
    ``.hg``, ``.svn``: never delivered). Other dot-files are ordinary files of the skill.
    """
    if type(path) is str:  # noqa: E721 - anything else (a str subclass, a list) is checked unmemoised
        return _normalised(path)
    return _normalise(path)


@functools.lru_cache(maxsize=4096)
def _normalised(path: str) -> str:
    """:func:`normalise_file_path`, memoised: most skills of a market name the same few paths
    (``scripts/run.py``, ``references/guide.md``), checked for every read. A refused path raises
    each time (exceptions are not cached)."""
    return _normalise(path)


def _normalise(path: str) -> str:
    if not isinstance(path, str) or path.startswith("/") or "\\" in path or has_control(path):
        raise UnsafePath(f"unsafe path refused: {path!r} (absolute, backslash or control character)")
    parts = loose_path_parts(path)  # no backslash here: the parts between slashes, "." and "" dropped
    if not parts:
        raise UnsafePath(f"unsafe path refused: {path!r} (empty)")
    for part in parts:
        if has_dot_segment(part):  # ".." is the one left
            raise UnsafePath(f"unsafe path refused: {path!r} (escapes the skill folder)")
        if part in VCS_FOLDERS:
            raise UnsafePath(f"unsafe path refused: {path!r} (version-control metadata is never delivered)")
    return "/".join(parts)


SKIPPED_FOLDERS = frozenset({"node_modules", "__pycache__"})
IGNORE_FILES = (".gitignore", ".ignore")

N = TypeVar("N")

DIR = "dir"
FILE = "file"
SYMLINK = "symlink"
OTHER = "other"


class Child(NamedTuple, Generic[N]):
    """One entry of a folder: ``kind`` is ``dir``, ``file``, ``symlink`` or ``other``.

    ``node`` is whatever the backend needs to list (folders) or read (files) the entry; ``token``
    changes whenever a file's content or mode changes (a stat tuple, a blob id, a content hash).
    ``link`` is set when the backend followed a link to reach the entry (``node`` is then the
    real target, which is what followed links are deduplicated by).
    """

    name: str
    kind: str
    node: N
    size: int = 0
    mode: int = 0
    token: str = ""
    link: bool = False


class Entry(NamedTuple, Generic[N]):
    """A file of a skill: ``path`` relative to the tree root, POSIX."""

    path: str
    node: N
    size: int
    mode: int
    token: str


@dataclass(slots=True)
class SkillLayout(Generic[N]):
    """One skill found in a tree: its folder name, root path and entries.

    ``link`` is set when the folder was reached through a followed link. ``deferred`` holds the
    folders of the skill a walk that defers listings did not enter (path, node, the ignore rules
    that apply there): ``files`` is then partial until :func:`complete_layout` lists them.
    """

    folder: str
    root: str
    node: N
    main: Entry[N]
    files: list[Entry[N]] = field(default_factory=list)
    link: bool = False
    deferred: list[tuple[str, N, Any]] = field(default_factory=list)

    @property
    def listed(self) -> bool:
        """Whether ``files`` is the skill's whole listing (no folder of it was deferred)."""
        return not self.deferred

    @property
    def skill_md_name(self) -> str:
        return self.main.path.rsplit("/", 1)[-1]

    def relative(self, entry: Entry[N]) -> str:
        """``entry.path`` relative to the skill folder."""
        return entry.path[len(self.root) + 1 :] if self.root else entry.path

    def digest(self) -> str:
        """A token over every entry's path and token: changes when any file changes."""
        lines = [f"{entry.path}\0{entry.token}\0{entry.size}\0{entry.mode}\n" for entry in (self.main, *self.files)]
        lines += [f"{path}/\n" for path, _, _ in self.deferred]  # not entered: only the folder's name counts
        return hashlib.sha256("".join(lines).encode()).hexdigest()


def shown(path: str) -> str:
    """``path`` safe to print and encode: undecodable bytes and control characters escaped."""
    text = path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in text)


def undecodable(name: str) -> bool:
    """Whether ``name`` came from bytes that are not valid UTF-8 (surrogate escapes)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


@dataclass(slots=True)
class Discovery(Generic[N]):
    """What a walk found: skills sorted by folder, problems, and the names at the tree's top."""

    skills: list[SkillLayout[N]]
    problems: list[str]
    top_level: tuple[str, ...] = ()
    failures: frozenset[str] = frozenset()  # the problems that cost a skill or a folder (unreadable)


def find_skills(
    root: N,
    list_dir: Callable[[N], Iterable[Child[N]]],
    *,
    root_name: str,
    read: Callable[[N], bytes] | None = None,
    follow_links: bool = False,
) -> tuple[list[SkillLayout[N]], list[str]]:
    """Walk the tree below ``root``; returns ``(skills sorted by folder, problems)``.

    See :func:`discover` for the arguments.
    """
    found = discover(root, list_dir, root_name=root_name, read=read, follow_links=follow_links)
    return found.skills, found.problems


def discover(
    root: N,
    list_dir: Callable[[N], Iterable[Child[N]]],
    *,
    root_name: str,
    read: Callable[[N], bytes] | None = None,
    follow_links: bool = False,
    by_folder: bool = True,
    defer: bool = False,
    look_for: Iterable[str] = (),
) -> Discovery[N]:
    """Walk the tree below ``root`` with the module's rules.

    ``root_name`` names the skill when the root itself holds a ``SKILL.md`` and nothing below it
    is a skill. ``read`` reads ignore files (without it none apply). ``follow_links`` says the
    backend resolved links itself (``Child.link``); otherwise ``symlink`` children are reported.
    Two skills with the same folder name (markets key skills by folder; ``by_folder=False`` for
    folder layers, which key them by path): the first in path order is kept, the other reported.
    Two paths that a followed link leads to the same folder: the real one is kept.

    ``defer`` lists only each skill folder's top level (plus the folders holding a ``look_for``
    path, relative to the skill folder, such as ``comet/skill.yaml``): its other folders are
    left in ``SkillLayout.deferred`` for :func:`complete_layout`, so a cold load does not walk
    every file of every skill. The rules are the same; what lies in a deferred folder (links,
    unreadable parts) is reported when it is listed.
    """
    walker = _Walker(list_dir, read, follow_links)
    if defer:
        wanted = [p.rsplit("/", 1)[0].split("/") for p in look_for if "/" in p]
        # Each folder holding a look_for path and every folder on the way to it.
        walker.wanted = frozenset("/".join(parts[:depth]) for parts in wanted for depth in range(1, len(parts) + 1))
        walker.defer = True
    walker.run(root, root_name)
    skills = walker.unique(by_folder)
    return Discovery(
        skills=skills, problems=sorted(walker.problems), top_level=walker.top_level, failures=frozenset(walker.failures)
    )


_Specs = tuple[tuple[str, Any], ...]  # (folder prefix, pathspec.GitIgnoreSpec)


class _Walker(Generic[N]):
    def __init__(
        self, list_dir: Callable[[N], Iterable[Child[N]]], read: Callable[[N], bytes] | None, follow: bool
    ) -> None:
        self.list_dir = list_dir
        self.read = read
        self.follow = follow
        self.problems: list[str] = []
        self.failures: list[str] = []
        self.found: list[SkillLayout[N]] = []
        self.entered: set[Any] = set()
        self.top_level: tuple[str, ...] = ()
        self.links: list[str] = []  # folders entered through a followed link
        self.defer = False
        # Skill-relative folders listed even when deferring (and the folders above them).
        self.wanted: frozenset[str] = frozenset()

    def fail(self, problem: str) -> None:
        self.problems.append(problem)
        self.failures.append(problem)

    def linked(self, path: str) -> bool:
        return bool(self.links) and any(path == link or path.startswith(link + "/") for link in self.links)

    def run(self, root: N, root_name: str) -> None:
        # The root itself must be listable: a tree that cannot be read at all is unavailable
        # (the caller keeps serving what it had), not empty.
        listed = self.listing("", root, (), list(self.list_dir(root)))
        if listed is None:
            return
        children, specs = listed
        self.top_level = tuple(c.name for c in children)
        if self.follow:
            self.entered.add(root)
        main = self.main(children, "")
        before = len(self.problems)
        self.search([("", children, specs)])
        if main is None or self.found:
            self.report_loose(children, main)
        if main is None:
            return
        if self.found:
            self.problems.append(
                f"{main.name} at the top of the tree is not a skill: the skill folders below it are loaded; "
                "move it into a folder of its own"
            )
            return
        # The root is one skill: what the search met below it is reported again while collecting.
        del self.problems[before:]
        self.entered = {root} if self.follow else set()
        layout = SkillLayout(folder=root_name, root="", node=root, main=_entry("", main))
        if self.collect(layout, "", children, main, specs):
            self.found.append(layout)

    def listing(
        self, prefix: str, node: N, specs: _Specs, children: list[Child[N]] | None = None
    ) -> tuple[list[Child[N]], _Specs] | None:
        """The children of a folder the rules keep, and the ignore rules that apply below it."""
        try:
            children = list(self.list_dir(node)) if children is None else children
        except OSError as exc:
            self.fail(f"cannot read folder {shown(prefix.rstrip('/') or '.')}: {exc.strerror or exc}")
            return None
        kept: list[Child[N]] = []
        for child in children:
            if not child.name.isascii() and undecodable(child.name):
                self.problems.append(f"name is not valid UTF-8, skipped: {shown(prefix + child.name)}")
            elif child.name not in VCS_FOLDERS and not (not prefix and child.name in RESERVED_NAMES):
                kept.append(child)
        kept.sort(key=_name)  # a stable order decides which duplicate is kept
        specs = self.ignore_specs(prefix, kept, specs)
        if specs:
            kept = [c for c in kept if not _ignored(prefix + c.name, c.kind == DIR, specs)]
        return kept, specs

    def ignore_specs(self, prefix: str, children: list[Child[N]], specs: _Specs) -> _Specs:
        if self.read is None:
            return specs
        for child in children:
            if child.kind == FILE and child.name in IGNORE_FILES:
                try:
                    lines = self.read(child.node).decode("utf-8", "replace").splitlines()
                except (OSError, KeyError) as exc:
                    self.problems.append(f"cannot read {shown(prefix + child.name)}, its rules are not applied: {exc}")
                    continue
                from pathspec import GitIgnoreSpec  # only when listing, never on a warm turn

                specs = (*specs, (prefix, GitIgnoreSpec.from_lines(lines)))
        return specs

    def main(self, children: list[Child[N]], prefix: str) -> Child[N] | None:
        files: dict[str, Child[N]] = {}
        for child in children:
            if child.name in SKILL_MD_NAMES:
                if child.link:
                    self.problems.append(
                        f"symlink skipped: {shown(prefix + child.name)} (a SKILL.md must be a regular file)"
                    )
                elif child.kind == FILE:
                    files[child.name] = child
                elif child.kind == DIR:
                    self.problems.append(f"{shown(prefix + child.name)} is a folder, not a file: ignored")
        return next((files[name] for name in SKILL_MD_NAMES if name in files), None)

    def report_loose(self, children: list[Child[N]], main: Child[N] | None) -> None:
        for child in children:
            name = child.name
            if child.kind == FILE and child is not main and name.lower().endswith(".md") and name not in SKILL_MD_NAMES:
                if not name.upper().startswith(("README", "LICENSE", "CHANGELOG", "CONTRIBUTING")):
                    self.problems.append(
                        f"loose file {shown(name)} at the top of the tree is not a skill (a skill is a folder "
                        "holding SKILL.md): ignored"
                    )

    def enter(self, child: Child[N]) -> bool:
        """Record a folder as visited; ``False`` for a followed link to a folder already visited
        (which also stops loops)."""
        if not self.follow:
            return True
        if child.link and child.node in self.entered:
            return False
        self.entered.add(child.node)
        return True

    def search(self, stack: list[tuple[str, list[Child[N]], _Specs]]) -> None:
        """Look for skill folders below the listed folders on ``stack``."""
        while stack:
            prefix, children, specs = stack.pop()
            for child in children:
                path = prefix + child.name
                if child.kind in (SYMLINK, OTHER):
                    self.problems.append(self.skipped(child.kind, path))
                elif child.kind == DIR and child.name not in SKIPPED_FOLDERS:
                    if not self.enter(child):
                        self.problems.append(f"link {shown(path)} leads to a folder already loaded: skipped")
                        continue
                    if child.link:
                        self.links.append(path)
                    listed = self.listing(path + "/", child.node, specs)
                    if listed is not None:
                        self.folder(path, child, listed, stack)

    def folder(
        self,
        path: str,
        child: Child[N],
        listed: tuple[list[Child[N]], _Specs],
        stack: list[tuple[str, list[Child[N]], _Specs]],
    ) -> None:
        children, specs = listed
        main = self.main(children, path + "/")
        if main is None:
            stack.append((path + "/", children, specs))
            return
        try:
            folder = check_folder(child.name)
        except InvalidBundle as exc:
            self.problems.append(f"skill folder {shown(path)} skipped: {exc}")
            return
        layout = SkillLayout(
            folder=folder, root=path, node=child.node, main=_entry(path + "/", main), link=self.linked(path)
        )
        if self.collect(layout, path + "/", children, main, specs):
            self.found.append(layout)

    def collect(
        self, layout: SkillLayout[N], prefix: str, children: list[Child[N]], main: Child[N], specs: _Specs
    ) -> bool:
        """Fill ``layout.files``; ``False`` (with a problem) when part of the skill is unreadable."""
        return self.gather(layout, [(prefix, children, specs)], main)

    def gather(
        self,
        layout: SkillLayout[N],
        pending: list[tuple[str, list[Child[N]], _Specs]],
        main: Child[N] | None,
        unreadable: str = "skipped",
    ) -> bool:
        """List the folders on ``pending`` into ``layout.files`` (deferring what ``defer`` says)."""
        start = len(layout.root) + 1 if layout.root else 0
        while pending:
            base, items, inherited = pending.pop()
            for child in items:
                path = base + child.name
                if child is main:
                    continue
                if child.link:
                    # Only a skill folder itself may be a followed link, never what lies inside one.
                    self.problems.append(f"symlink skipped: {shown(path)}")
                elif child.kind == FILE:
                    layout.files.append(_entry(base, child))
                elif child.kind == DIR:
                    if child.name in SKIPPED_FOLDERS:
                        continue
                    if self.defer and path[start:] not in self.wanted:
                        layout.deferred.append((path, child.node, inherited))
                        continue
                    listed = self.listing(path + "/", child.node, inherited)
                    if listed is None:
                        self.fail(
                            f"skill {shown(layout.root or layout.folder)} {unreadable}: part of it cannot be read"
                        )
                        return False
                    pending.append((path + "/", *listed))
                else:
                    self.problems.append(self.skipped(child.kind, path))
        layout.files.sort(key=lambda e: e.path)
        return True

    def skipped(self, kind: str, path: str) -> str:
        if kind != SYMLINK:
            return f"not a regular file, skipped: {shown(path)}"
        if self.follow:
            return f"symlink skipped: {shown(path)} (broken, or not a file or folder)"
        return f"symlink skipped: {shown(path)}"

    def unique(self, by_folder: bool) -> list[SkillLayout[N]]:
        """One skill per folder a followed link leads to (the real path wins over links), and per
        folder name when ``by_folder``; sorted by folder name, then path."""
        ordered = sorted(self.found, key=lambda item: (item.link, item.root.split("/")))
        if self.follow:
            ordered = self.first_of(
                ordered, lambda layout: layout.node, "link {skipped} leads to the same folder as {kept}: skipped"
            )
        if by_folder:
            ordered = self.first_of(
                ordered,
                lambda layout: layout.folder,
                "duplicate skill folder {folder!r}: {skipped} skipped, {kept} kept",
            )
        return sorted(ordered, key=lambda item: (item.folder, item.root))

    def first_of(
        self, layouts: list[SkillLayout[N]], key: Callable[[SkillLayout[N]], Any], message: str
    ) -> list[SkillLayout[N]]:
        kept: dict[Any, SkillLayout[N]] = {}
        for layout in layouts:
            first = kept.setdefault(key(layout), layout)
            if first is not layout:
                self.problems.append(
                    message.format(
                        folder=layout.folder, skipped=shown(layout.root or "."), kept=shown(first.root or ".")
                    )
                )
        return list(kept.values())


def complete_layout(
    layout: SkillLayout[N],
    list_dir: Callable[[N], Iterable[Child[N]]],
    *,
    read: Callable[[N], bytes] | None = None,
    follow_links: bool = False,
) -> tuple[SkillLayout[N] | None, list[str]]:
    """The whole listing of a skill a deferring walk found: its deferred folders listed with the
    same rules (and the ignore rules that applied where they lie). Returns a new layout with no
    folder deferred, or ``None`` when part of the skill cannot be read, and the problems met."""
    walker = _Walker(list_dir, read, follow_links)
    done = SkillLayout(folder=layout.folder, root=layout.root, node=layout.node, main=layout.main, link=layout.link)
    done.files = list(layout.files)
    pending: list[tuple[str, list[Child[N]], _Specs]] = []
    for path, node, specs in layout.deferred:
        listed = walker.listing(path + "/", node, specs)
        if listed is None:
            walker.fail(f"skill {shown(layout.root or layout.folder)} cannot be listed: part of it cannot be read")
            return None, walker.problems
        pending.append((path + "/", *listed))
    if not walker.gather(done, pending, None, "cannot be listed"):
        return None, walker.problems
    return done, walker.problems


_name = operator.itemgetter(0)  # Child.name


def _entry(prefix: str, child: Child[N]) -> Entry[N]:
    return Entry(prefix + child.name, child.node, child.size, child.mode, child.token)


def _ignored(path: str, is_dir: bool, specs: _Specs) -> bool:
    for base, spec in specs:
        if path.startswith(base) and spec.match_file(path[len(base) :] + ("/" if is_dir else "")):
            return True
    return False


def tree_from_paths(files: Iterable[tuple[str, Child[str]]]) -> Callable[[str], list[Child[str]]]:
    """Turn a flat listing of ``(path, file child)`` into a ``list_dir`` over folder paths.

    For backends that list a whole tree in one call (a filesystem's batched walk): folders are
    keyed by their path (``""`` is the root) and appear as ``dir`` children of their parents.
    """
    folders: dict[str, list[Child[str]]] = {"": []}
    for path, child in files:
        parts = path.split("/")
        for depth in range(1, len(parts)):
            folder = "/".join(parts[:depth])
            if folder not in folders:
                folders[folder] = []
                folders["/".join(parts[: depth - 1])].append(Child(parts[depth - 1], DIR, folder))
        folders["/".join(parts[:-1])].append(child)

    def list_dir(folder: str) -> list[Child[str]]:
        return folders.get(folder, [])

    return list_dir
