"""Where a skill's Python requirements come from, read from its files without running them.

A skill may say what its scripts need in three ways, all read here as bytes (the caller reads
the files): PEP 723 inline metadata in a ``.py`` script (a ``# /// script`` block with
``dependencies = [...]``), a ``requirements.txt`` or a ``pyproject.toml`` (``[project]
dependencies``) at the top of its folder. For skills that say it only in prose, the operator adds
packages in ``harness.yaml``, and for markets the operator trusts the imports of the scripts can
be *inferred* (:func:`infer_imports`): standard-library modules and the skill's own modules are
left out, known import names map to their distribution (:data:`IMPORT_DISTRIBUTIONS`, plus
:data:`SAME_NAME` packages whose import name is the distribution's), and anything else is
reported, never guessed.

Every requirement is checked by :func:`check_requirement`, a strict subset of PEP 508: a name,
optional extras, version specifiers and an environment marker. A URL (``pkg @ https://…``), a
path, or an option line (``-e``, ``-r``, ``--index-url``, ``--hash``) is refused: a market must not
choose the index or a host path the build reads (SECURITY rule 13). Only the ``dependencies`` of
these files are read: nothing else in them (``[tool.uv]`` sources or indexes) reaches uv.

Reading is bounded, whatever a market publishes: :func:`files_to_read` picks the files (each up
to :data:`MAX_PARSED` bytes, :data:`MAX_READ` in all), a requirement is at most
:data:`MAX_REQUIREMENT_LENGTH` characters and is checked in time linear in its length, a skill
declares at most :data:`MAX_REQUIREMENTS` distributions, and at most :data:`MAX_PROBLEMS`
problems are named one by one.
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath

from filesystems import redact_secrets

__all__ = [
    "IMPORT_DISTRIBUTIONS",
    "SAME_NAME",
    "Inferred",
    "Requirement",
    "Requirements",
    "canonical_name",
    "check_requirement",
    "files_to_read",
    "infer_imports",
    "operator_requirements",
    "read_requirements",
]

#: Where a requirement was found (shown by ``harness skills env``).
PEP723 = "pep723"
REQUIREMENTS_TXT = "requirements.txt"
PYPROJECT = "pyproject.toml"
OPERATOR = "operator"
INFERRED = "inferred"

#: Import names whose distribution has another name (curated; the import name is the key).
IMPORT_DISTRIBUTIONS: Mapping[str, str] = {
    "PIL": "Pillow",
    "yaml": "PyYAML",
    "docx": "python-docx",
    "pptx": "python-pptx",
    "fitz": "PyMuPDF",
    "pymupdf": "PyMuPDF",
    "cv2": "opencv-python-headless",
    "bs4": "beautifulsoup4",
    "sklearn": "scikit-learn",
    "skimage": "scikit-image",
    "dateutil": "python-dateutil",
    "dotenv": "python-dotenv",
    "jwt": "PyJWT",
    "magic": "python-magic",
    "Crypto": "pycryptodome",
    "OpenSSL": "pyOpenSSL",
    "serial": "pyserial",
    "attr": "attrs",
    "pdfminer": "pdfminer.six",
    "fpdf": "fpdf2",
    "markdown": "Markdown",
    "jinja2": "Jinja2",
    "xlsxwriter": "XlsxWriter",
    "Levenshtein": "python-Levenshtein",
    "docx2txt": "docx2txt",
    "pythoncom": "pywin32",
}
#: Import names that are also their distribution's name.
SAME_NAME: frozenset[str] = frozenset(
    {
        "anthropic",
        "chardet",
        "click",
        "defusedxml",
        "httpx",
        "imageio",
        "lxml",
        "markitdown",
        "matplotlib",
        "numpy",
        "openai",
        "openpyxl",
        "pandas",
        "pdf2image",
        "pdfplumber",
        "playwright",
        "psutil",
        "pydantic",
        "pypdf",
        "PyPDF2",
        "pytesseract",
        "qrcode",
        "reportlab",
        "requests",
        "rich",
        "scipy",
        "tabulate",
        "toml",
        "tqdm",
        "xlrd",
    }
)

_NAME = r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?"
_VERSION = r"[A-Za-z0-9_.*+!-]+"
_SPEC = rf"(?:===|~=|==|!=|<=|>=|<|>)\s*{_VERSION}"
_REQUIREMENT = re.compile(
    rf"(?P<name>{_NAME})\s*"
    rf"(?:\[\s*(?P<extras>{_NAME}(?:\s*,\s*{_NAME})*)?\s*\])?\s*"
    rf"(?P<specs>\(?\s*{_SPEC}(?:\s*,\s*{_SPEC})*\s*\)?)?\s*"
    r"(?:;\s*(?P<marker>[A-Za-z0-9_.<>=!~'\" ()-]+))?"
)
_MARKER_WORDS = frozenset(
    {
        "os_name",
        "sys_platform",
        "platform_machine",
        "platform_python_implementation",
        "platform_release",
        "platform_system",
        "platform_version",
        "python_version",
        "python_full_version",
        "implementation_name",
        "implementation_version",
        "extra",
        "and",
        "or",
        "in",
        "not",
    }
)
_BLOCK_START = re.compile(r"# /// (?P<type>[a-zA-Z0-9-]+)")
#: Largest file read for requirements or imports (bytes); larger ones are reported, not parsed.
MAX_PARSED = 1024 * 1024
#: Most bytes read from one skill's files for requirements and imports; the rest is reported.
MAX_READ = 16 * 1024 * 1024
#: Longest requirement (characters): longer lines are refused before they are parsed.
MAX_REQUIREMENT_LENGTH = 1000
#: Most distributions one skill's files may declare; with more, none is installed.
MAX_REQUIREMENTS = 200
#: Most problems named one by one for a skill; the rest are counted.
MAX_PROBLEMS = 20
_SHOWN = 60  # characters of a refused requirement quoted in its problem


@dataclass(frozen=True, kw_only=True, slots=True)
class Requirement:
    """One checked requirement in canonical form (``text``) and where it was found."""

    text: str
    name: str  # the canonical distribution name (PEP 503)
    source: str
    origin: str = ""  # the file it came from (``scripts/x.py``), when it came from one

    def as_dict(self) -> dict[str, str]:
        """The JSON shape of ``harness skills env --json``."""
        return {"requirement": self.text, "source": self.source, "origin": self.origin}


@dataclass(frozen=True, kw_only=True, slots=True)
class Requirements:
    """What a skill's files declare: checked requirements and the problems met (refused
    requirements, unreadable metadata), each problem a sentence naming its file."""

    requirements: tuple[Requirement, ...] = ()
    problems: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True, slots=True)
class Inferred:
    """Distributions inferred from imports, and the imports that map to none (reported)."""

    requirements: tuple[Requirement, ...] = ()
    unknown: tuple[str, ...] = ()


def canonical_name(name: str) -> str:
    """The PEP 503 normal form of a distribution name (``Py_YAML`` → ``py-yaml``)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def check_requirement(text: str) -> tuple[str, str]:
    """``(canonical text, canonical name)`` of one requirement string; raises ``ValueError``
    saying why it is refused (an option, a URL or path, or not a PEP 508 name-and-version)."""
    if len(text) > MAX_REQUIREMENT_LENGTH:
        raise ValueError(f"{_quoted(text)} is longer than {MAX_REQUIREMENT_LENGTH} characters")
    # One space for each run of whitespace: the expression's optional spaces then cannot share
    # out a long run in many ways (a run of a million spaces made it backtrack for hours).
    stripped = " ".join(text.split())
    if stripped.startswith("-"):
        raise ValueError(f"{_quoted(stripped)} is an option; options (-e, -r, --index-url, ...) are not allowed")
    if "@" in stripped or "://" in stripped or stripped.startswith((".", "/", "~")) or "\\" in stripped:
        raise ValueError(f"{_quoted(stripped)} names a URL or a path; only package names and versions are allowed")
    found = _REQUIREMENT.fullmatch(stripped)
    if found is None or "/" in stripped:
        raise ValueError(f"{_quoted(stripped)} is not a requirement such as 'pypdf>=4' or 'pandas[excel]'")
    marker = " ".join((found["marker"] or "").split())
    words = re.findall(r"[A-Za-z_][A-Za-z0-9_.]*", re.sub(r"\"[^\"]*\"|'[^']*'", " ", marker))
    if any(word not in _MARKER_WORDS for word in words):
        raise ValueError(f"{_quoted(stripped)} has an environment marker that is not PEP 508")
    name = canonical_name(found["name"])
    extras = sorted({canonical_name(e.strip()) for e in (found["extras"] or "").split(",") if e.strip()})
    specs = sorted(re.sub(r"\s+", "", s) for s in (found["specs"] or "").strip("() ").split(",") if s.strip())
    canonical = name + (f"[{','.join(extras)}]" if extras else "") + ",".join(specs)
    return (f"{canonical}; {marker}" if marker else canonical), name


def files_to_read(files: Iterable[tuple[str, int]]) -> tuple[list[str], list[str]]:
    """Which of a skill's files (``(path, size)`` pairs) to read for requirements and imports:
    ``requirements.txt`` and ``pyproject.toml`` at its top level, then its ``.py`` scripts by
    path, each up to :data:`MAX_PARSED` bytes and :data:`MAX_READ` bytes in all. Returns the
    paths to read and the problems naming what is left unread."""
    declarations = (REQUIREMENTS_TXT, PYPROJECT)
    candidates = sorted((path not in declarations, path, size) for path, size in files)
    wanted: list[str] = []
    problems: list[str] = []
    total = skipped = 0
    for script, path, size in candidates:
        if script and not path.endswith(".py"):
            continue
        if size > MAX_PARSED:
            problems.append(f"{path}: {size} bytes, over the {MAX_PARSED} bytes read for requirements; not read")
        elif total + size > MAX_READ:
            skipped += 1
        else:
            wanted.append(path)
            total += size
    if skipped:
        problems.append(f"{skipped} scripts not read: over {MAX_READ} bytes in all")
    return wanted, problems


def read_requirements(files: Mapping[str, bytes], unread: Iterable[str] = ()) -> Requirements:
    """The requirements the skill's own files declare. ``files`` maps paths relative to the
    skill folder to their bytes: its ``.py`` scripts, and ``requirements.txt`` and
    ``pyproject.toml`` at its top level (see :func:`files_to_read`); ``unread`` are the
    problems met choosing them, reported first."""
    found: list[Requirement] = []
    problems: list[str] = list(unread)
    for path, data in sorted(files.items()):
        if len(data) > MAX_PARSED:  # a market's listing may understate a size
            problems.append(f"{path}: {len(data)} bytes, over the {MAX_PARSED} bytes read for requirements; not read")
            continue
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            problems.append(f"{path}: not UTF-8, requirements not read")
            continue
        if path == REQUIREMENTS_TXT:
            lines = _requirement_lines(text)
            source = REQUIREMENTS_TXT
        elif path == PYPROJECT:
            lines, problem = _pyproject_dependencies(text)
            problems += [f"{path}: {problem}"] if problem else []
            source = PYPROJECT
        elif path.endswith(".py"):
            lines, problem = _script_dependencies(text)
            problems += [f"{path}: {problem}"] if problem else []
            source = PEP723
        else:
            continue
        checked, refused = _checked(lines, source, path)
        found += checked
        problems += refused
    declared = len({r.name for r in found})
    if declared > MAX_REQUIREMENTS:
        found = []
        problems.insert(
            0,
            f"declares {declared} requirements, more than the {MAX_REQUIREMENTS} a skill may declare; none is installed",
        )
    if len(problems) > MAX_PROBLEMS:
        problems[MAX_PROBLEMS:] = [f"and {len(problems) - MAX_PROBLEMS} more problems"]
    return Requirements(requirements=tuple(found), problems=tuple(problems))


def infer_imports(files: Mapping[str, bytes], own: Iterable[str], declared: Iterable[str] = ()) -> Inferred:
    """The distributions the ``.py`` files import, by the curated map. ``own`` are the paths
    of every file of the skill (its own modules and packages are not requirements);
    ``declared`` are canonical names already required (not inferred again)."""
    local = _own_modules(own)
    covered = set(declared)
    requirements: dict[str, Requirement] = {}
    unknown: set[str] = set()
    for path, data in sorted(files.items()):
        if not path.endswith(".py"):
            continue
        for module in sorted(_imported(data)):
            if module in sys.stdlib_module_names or module in local or module == "__future__":
                continue
            distribution = IMPORT_DISTRIBUTIONS.get(module) or (module if module in SAME_NAME else None)
            if distribution is None:
                unknown.add(module)
                continue
            name = canonical_name(distribution)
            if name not in covered and name not in requirements:
                requirements[name] = Requirement(text=name, name=name, source=INFERRED, origin=path)
    return Inferred(requirements=tuple(requirements.values()), unknown=tuple(sorted(unknown)))


def operator_requirements(packages: Iterable[str], origin: str) -> tuple[Requirement, ...]:
    """The operator's packages (``harness.yaml``) as requirements; ``ValueError`` names a bad one."""
    checked, refused = _checked(list(packages), OPERATOR, origin)
    if refused:
        raise ValueError(refused[0])
    return tuple(checked)


def _checked(lines: Iterable[str], source: str, origin: str) -> tuple[list[Requirement], list[str]]:
    checked: list[Requirement] = []
    refused: list[str] = []
    for line in lines:
        try:
            text, name = check_requirement(line)
        except ValueError as exc:
            refused.append(f"{origin}: refused requirement: {exc}")
            continue
        checked.append(Requirement(text=text, name=name, source=source, origin=origin))
    return checked, refused


def _requirement_lines(text: str) -> list[str]:
    """The requirement lines of a requirements file: comments, blanks and continuations folded."""
    lines: list[str] = []
    for raw in text.replace("\\\n", "").splitlines():
        line = re.sub(r"(^|\s)#.*$", "", raw).strip()
        if line:
            lines.append(line)
    return lines


def _pyproject_dependencies(text: str) -> tuple[list[str], str | None]:
    import tomllib  # only environments read TOML: import harness does not pay for it

    try:
        project = tomllib.loads(text).get("project", {})
    except (tomllib.TOMLDecodeError, RecursionError) as exc:
        return [], f"invalid TOML ({exc})"
    return _string_list(project.get("dependencies", []) if isinstance(project, dict) else [], "[project] dependencies")


def _script_dependencies(text: str) -> tuple[list[str], str | None]:
    """``dependencies`` of the script's PEP 723 ``script`` block (none without a block)."""
    if "# /// script" not in text:
        return [], None
    blocks = [content for kind, content in _metadata_blocks(text) if kind == "script"]
    if len(blocks) > 1:
        return [], "more than one '# /// script' block (PEP 723 allows one)"
    if not blocks:
        return [], None
    content = "".join(line[2:] if line.startswith("# ") else line[1:] for line in blocks[0].splitlines(True))
    import tomllib

    try:
        metadata = tomllib.loads(content)
    except (tomllib.TOMLDecodeError, RecursionError) as exc:
        return [], f"invalid TOML in its '# /// script' block ({exc})"
    return _string_list(metadata.get("dependencies", []), "dependencies")


def _metadata_blocks(text: str) -> list[tuple[str, str]]:
    """The PEP 723 metadata blocks of a script, ``(type, content)``, found as the PEP's reference
    expression finds them (a block ends at the last ``# ///`` line of its run of comment lines),
    in one pass over the lines: the expression itself goes over every later line again from each
    opening line, hours for a file of them."""
    lines = text.split("\n")
    last = len(lines) - 1  # the text after the last newline: it may close a block, not continue one
    blocks: list[tuple[str, str]] = []
    index = 0
    while index < last:
        start = _BLOCK_START.fullmatch(lines[index])
        if start is None:
            index += 1
            continue
        end, close = index + 1, None
        while True:
            line = lines[end]
            if line == "# ///" and end > index + 1:
                close = end
            if end == last or not (line == "#" or line.startswith("# ")):
                break
            end += 1
        if close is None:  # no opening line before ``end`` has a closing line either
            index = end
            continue
        blocks.append((start["type"], "".join(f"{line}\n" for line in lines[index + 1 : close])))
        index = close + 1
    return blocks


def _quoted(text: str) -> str:
    """``text`` quoted for a problem: credentials masked, cut short when long."""
    shown = redact_secrets(text)
    return repr(shown) if len(shown) <= _SHOWN else f"{shown[:_SHOWN]!r}... ({len(text)} characters)"


def _string_list(value: object, what: str) -> tuple[list[str], str | None]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        return [], f"{what} must be a list of strings"
    return list(value), None


def _imported(data: bytes) -> set[str]:
    """Top-level names of the absolute imports in one script (``import a.b`` → ``a``)."""
    try:
        tree = ast.parse(data)
    except (SyntaxError, ValueError, RecursionError, MemoryError):  # hostile nesting must not stop a worker
        return set()
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.partition(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.partition(".")[0])
    return names


def _own_modules(paths: Iterable[str]) -> set[str]:
    """Module names a skill provides itself: its ``.py`` files' stems and its folders' names."""
    names: set[str] = set()
    for path in paths:
        parts = PurePosixPath(path).parts
        names.update(parts[:-1])
        if parts and parts[-1].endswith(".py"):
            names.add(parts[-1][:-3])
    return names
