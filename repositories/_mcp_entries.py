"""The MCP Skills extension's ``Skill`` entries as the MCP market reads them (no SDK here).

An entry is checked whole before anything of it is used: its URI (``skill://<prefix>/<name>/SKILL.md``
with safe segments, the last one equal to ``frontmatter.name``), its frontmatter (a JSON object
with a text ``name`` and ``description``) and its ``resources`` (a complete manifest within the
extension's limits, or ``"dynamic"``). The frontmatter of a fetched ``SKILL.md`` is compared
field by field with the entry's (:func:`frontmatter_problem`).
"""

from __future__ import annotations

import datetime
import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from filesystems import relative_path_problem
from repositories.discovery import check_folder, normalise_file_path
from repositories.errors import InvalidBundle, UnsafePath
from repositories.sources import make_source

#: The Skills extension's per-skill limits: files (SKILL.md included) and their total size.
MAX_FILES = 512
MAX_BYTES = 16 * 1024 * 1024
SCHEME = "skill://"
MAIN = "SKILL.md"
_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
# A frontmatter larger than this is not compared (the harness's parser refuses it anyway).
_MAX_FRONTMATTER = 64 * 1024
_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
#: The body of the stand-in SKILL.md the catalog is built from until the skill is used.
STAND_IN_BODY = "(The instructions are fetched from the skill's MCP server when the skill is loaded.)\n"


@dataclass(frozen=True, slots=True)
class RemoteFile:
    """One file of a listed skill: its URI and what its bytes must be."""

    uri: str
    digest: str
    size: int


@dataclass(frozen=True, slots=True)
class RemoteSkill:
    """One checked entry.

    ``path`` is the skill path (``team-a/dupe``), ``name`` its last segment, ``part`` the slug of
    its prefix (``team-a``; empty without one) that keeps same-named skills apart in ids and cache
    paths. ``files`` maps relative paths (SKILL.md included) to files, ``None`` for a dynamic
    skill. ``binding`` is what an approval binds to: a hash of every ``{uri, digest}`` (a dynamic
    skill has none and gets a token of its entry that never matches a later one).
    """

    uri: str
    path: str
    name: str
    part: str
    frontmatter: Mapping[str, Any]
    files: Mapping[str, RemoteFile] | None
    binding: str

    @property
    def root(self) -> str:
        """The URI of the skill's folder, with a trailing slash."""
        return self.uri[: -len(MAIN)]

    @property
    def dynamic(self) -> bool:
        """Whether the server publishes no manifest (``"resources": "dynamic"``)."""
        return self.files is None


def parse_entry(raw: Any) -> tuple[RemoteSkill, list[str]]:
    """A checked entry and the problems of files dropped from it; ``InvalidBundle`` when the
    entry as a whole cannot be loaded (the message names the URI and the rule)."""
    uri = raw.get("uri") if isinstance(raw, dict) else None
    if not isinstance(uri, str) or not uri.startswith(SCHEME) or not uri.endswith("/" + MAIN):
        raise InvalidBundle(f"entry URI {str(uri)[:200]!r} is not a {SCHEME}<path>/{MAIN} URI")
    path = uri[len(SCHEME) : -len(MAIN) - 1]
    problem = relative_path_problem(path) if path else "is empty"
    if problem is not None or any(segment.startswith(".") for segment in path.split("/")):
        raise InvalidBundle(f"{uri}: the skill path {path!r} {problem or 'has a hidden segment'}")
    prefix, _, name = path.rpartition("/")
    check_folder(name)
    frontmatter = raw.get("frontmatter")
    if not isinstance(frontmatter, dict) or not isinstance(frontmatter.get("name"), str):
        raise InvalidBundle(f"{uri}: the entry has no frontmatter object with a text name")
    if frontmatter["name"] != name:
        raise InvalidBundle(
            f"{uri}: the path's last segment {name!r} is not the frontmatter name {frontmatter['name'][:80]!r}"
        )
    resources = raw.get("resources")
    part = make_source(prefix) if prefix else ""
    if resources == "dynamic":
        token = hashlib.sha256(json.dumps([uri, frontmatter], sort_keys=True, default=str).encode()).hexdigest()
        return RemoteSkill(uri, path, name, part, frontmatter, None, f"dynamic:{token}"), []
    if not isinstance(resources, list):
        raise InvalidBundle(f"{uri}: resources is {str(resources)[:40]!r}, neither a file manifest nor 'dynamic'")
    if len(resources) > MAX_FILES:
        raise InvalidBundle(f"{uri} lists {len(resources)} files, over the extension's limit of {MAX_FILES}")
    root = uri[: -len(MAIN)]
    files: dict[str, RemoteFile] = {}
    dropped: list[str] = []
    for item in resources:
        file = _remote_file(item)
        if file is None or not file.uri.startswith(root):
            raise InvalidBundle(f"{uri} lists a malformed or foreign file {str(item)[:200]!r}")
        try:
            relative = normalise_file_path(file.uri[len(root) :])
        except UnsafePath as exc:
            dropped.append(f"file of {uri} dropped: {exc}")
            continue
        if relative in files:
            raise InvalidBundle(f"{uri} lists the file {relative!r} twice")
        files[relative] = file
    total = sum(f.size for f in files.values())
    if total > MAX_BYTES:
        raise InvalidBundle(f"{uri} lists {total} bytes, over the extension's limit of {MAX_BYTES}")
    if MAIN not in files:
        raise InvalidBundle(f"{uri} does not list its own {MAIN}")
    pairs = sorted((f.uri, f.digest) for f in files.values())
    binding = "sha256:" + hashlib.sha256(json.dumps(pairs).encode()).hexdigest()
    return RemoteSkill(uri, path, name, part, frontmatter, files, binding), dropped


def _remote_file(item: Any) -> RemoteFile | None:
    if not isinstance(item, dict):
        return None
    uri, digest, size = item.get("uri"), item.get("digest"), item.get("size")
    if not isinstance(uri, str) or not isinstance(digest, str) or not _DIGEST.fullmatch(digest):
        return None
    if not isinstance(size, int) or isinstance(size, bool) or not 0 <= size <= MAX_BYTES:
        return None
    return RemoteFile(uri=uri, digest=digest, size=size)


def stand_in(frontmatter: Mapping[str, Any]) -> bytes:
    """A SKILL.md of the entry's frontmatter alone: what the catalog is built from before use."""
    head = yaml.safe_dump(dict(frontmatter), sort_keys=False, allow_unicode=True, default_flow_style=False)
    return f"---\n{head}---\n{STAND_IN_BODY}".encode()


def as_json(value: Any) -> Any:
    """YAML values as the extension's JSON renders them (dates as ISO text)."""
    if isinstance(value, Mapping):
        return {str(key): as_json(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [as_json(item) for item in value]
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, datetime.date | datetime.datetime):
        return value.isoformat()
    return str(value)


def frontmatter_problem(data: bytes, expected: Mapping[str, Any]) -> str | None:
    """Why the frontmatter of the fetched ``SKILL.md`` ``data`` is not the entry's
    ``expected`` one (the fields that differ), or ``None`` when they are equal."""
    try:
        actual = frontmatter_fields(data)
    except InvalidBundle as exc:
        return str(exc)
    differ = sorted(key for key in {*actual, *expected} if actual.get(key, _MISSING) != expected.get(key, _MISSING))
    if differ:
        return "its frontmatter differs from the listed one in " + ", ".join(repr(k[:60]) for k in differ[:10])
    return None


def frontmatter_fields(data: bytes) -> dict[str, Any]:
    """The frontmatter of ``SKILL.md`` bytes as the extension's JSON renders it (a safe loader, no
    aliases, at most 64 KiB); ``InvalidBundle`` saying why there is none."""
    try:
        text = data.decode("utf-8").lstrip("\ufeff")
    except UnicodeDecodeError:
        raise InvalidBundle("it is not UTF-8 text") from None
    lines = text.split("\n")
    if not lines or lines[0].rstrip("\r") != "---":
        raise InvalidBundle("it does not start with a frontmatter block")
    end = next((i for i, line in enumerate(lines[1:], 1) if line.rstrip("\r") == "---"), None)
    if end is None:
        raise InvalidBundle("its frontmatter block is not closed")
    head = "\n".join(lines[1:end])
    if len(head) > _MAX_FRONTMATTER:
        raise InvalidBundle(f"its frontmatter is over {_MAX_FRONTMATTER} characters")
    try:
        if any(isinstance(event, yaml.AliasEvent) for event in yaml.parse(head, Loader=_LOADER)):
            raise InvalidBundle("its frontmatter uses YAML aliases")
        actual = as_json(yaml.load(head, Loader=_LOADER))  # noqa: S506 - a safe loader (CSafeLoader)
    except yaml.YAMLError as exc:
        raise InvalidBundle(f"its frontmatter is not valid YAML ({str(exc).splitlines()[0]})") from None
    if not isinstance(actual, dict):
        raise InvalidBundle("its frontmatter is not a mapping")
    return actual


_MISSING = object()
