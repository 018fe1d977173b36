"""Import rules between and inside the packages ``harness``, ``repositories`` and ``filesystems``.

Every module is parsed (not imported) and every import is collected, including imports inside
functions and under ``if TYPE_CHECKING:``. The rules:

- no import cycle between modules. Imports under ``TYPE_CHECKING`` are left out of the cycle
  check: they never run, so they cannot make import order matter, and annotations are the one
  place a lower layer may name a higher one's types;
- every part (a package, a subpackage of ``harness``, a top-level module of ``harness``) has a
  floor in ``FLOORS`` and imports only parts on lower floors, so there is no cycle between parts
  either (``filesystems`` at the bottom, then ``repositories``, the shared top-level modules,
  ``skills`` and ``models``, ..., the agent, then the CLI and the adapters);
- nothing imports another module's private (``_``) names; a private module may be imported by
  modules of its own package only;
- ``harness.adapters`` is a leaf: nothing else imports it, and each optional agent framework is
  imported by its own adapter module only (so the core never needs one installed);
- the tool families that build gated tools (the shell, file writes) are put together in one
  place, ``Toolset.build`` (``harness/agent/toolset.py``), behind the approval gate: every other call path (the MCP server,
  the adapters, workflow actions) takes its tools from ``Harness.tools_for``.

The documents are checked against the code too: the documents they cite exist, and every
``Class.member`` they cite in backticks is a class of the packages with that member.
"""

from __future__ import annotations

import ast
import builtins
import enum
import functools
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("harness", "repositories", "filesystems")

# Every part of the code base on its floor: a part imports only parts on lower floors, so no two
# parts can import each other even through a third. A part is a package (``filesystems``,
# ``repositories``), a subpackage of ``harness`` with everything in it, or a top-level module of
# ``harness``; ``harness`` itself is its ``__init__`` (the public names).
FLOORS: dict[str, int] = {
    "filesystems": 0,
    "repositories": 1,
    # shared by everything: errors, diagnostics, the runtime context, the clock, terminal escaping
    "harness.errors": 2,
    "harness.diagnostics": 2,
    "harness.context": 2,
    "harness.clock": 2,
    "harness.terminal": 2,
    "harness._version": 2,
    # the SKILL.md model (with the market scanner) and the models
    "harness.skills": 3,
    "harness.models": 3,
    # a turn's plan, what a run reports, and the audit log
    "harness.pipeline": 4,
    "harness.events": 4,
    "harness.audit": 4,
    "harness.tools": 5,
    # what sits on the tools: the approval gate and the optional parts
    "harness.approval": 6,
    "harness.tracing": 6,
    "harness.engine": 6,
    "harness.learning": 6,
    "harness.mcp": 6,
    "harness.config": 7,
    "harness.agent": 8,
    "harness.adapters": 9,
    "harness.cli": 9,
    "harness.__main__": 10,
    "harness": 10,
}

# The MCP SDK is an optional extra: only these modules may import it (and ``harness.mcp``).
MCP_SDK = ("mcp", "mcp_types")
MCP_SDK_USERS = ("harness.mcp", "repositories.mcp")
HARNESS_MCP_USERS = ("harness.mcp", "harness.cli.mcp")

# Builders of tools the approval gate decides (shell, writes), and the modules that may use them:
# the agent's one place that puts tools together behind the gate, and the package re-exporting them.
GATED_BUILDERS = frozenset({"skill_tools", "file_tools"})
GATE_ASSEMBLY = ("harness.agent.toolset", "harness.tools")

# Cycles that remain for now, each with the reason (none today; keep it that way).
KNOWN_CYCLES: frozenset[frozenset[str]] = frozenset()


@dataclass(frozen=True, slots=True)
class Import:
    importer: str
    target: str  # a module
    names: tuple[str, ...]  # names taken from ``target`` (empty for ``import target``)
    type_checking: bool
    line: int


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            found[_module_name(path)] = path
    return found


MODULES = _modules()


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _resolve(module: str, path: Path, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    base = package[: len(package) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def _walk(node: ast.AST, type_checking: bool) -> Iterator[tuple[ast.AST, bool]]:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and _is_type_checking(child.test):
            for inner in child.body:
                yield inner, True
                yield from _walk(inner, True)
            for inner in child.orelse:
                yield inner, type_checking
                yield from _walk(inner, type_checking)
            continue
        yield child, type_checking
        yield from _walk(child, type_checking)


def _imports(module: str, path: Path) -> Iterator[Import]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node, type_checking in _walk(tree, False):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Import(module, alias.name, (), type_checking, node.lineno)
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(module, path, node)
            submodules = [alias.name for alias in node.names if f"{target}.{alias.name}" in MODULES]
            names = tuple(alias.name for alias in node.names if alias.name not in submodules)
            for sub in submodules:
                yield Import(module, f"{target}.{sub}", (), type_checking, node.lineno)
            if names or not submodules:
                yield Import(module, target, names, type_checking, node.lineno)


@functools.cache
def all_imports() -> list[Import]:
    """Every import statement of the packages (parsed once, by the first test that asks: the
    other test workers then collect this module without parsing every source)."""
    return [imp for module, path in MODULES.items() for imp in _imports(module, path)]


@functools.cache
def ours() -> list[Import]:
    """The imports of the packages' own modules."""
    return [imp for imp in all_imports() if imp.target.split(".")[0] in PACKAGES]


def _within(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def _where(imp: Import) -> str:
    return f"{imp.importer}:{imp.line} imports {imp.target}" + (f" ({', '.join(imp.names)})" if imp.names else "")


def _package(module: str) -> str:
    path = MODULES.get(module)
    return module if path is not None and path.name == "__init__.py" else module.rpartition(".")[0]


def test_every_package_module_is_found() -> None:
    assert {"harness", "repositories", "filesystems", "harness.agent.harness"} <= MODULES.keys()


def _part(module: str) -> str:
    """The part (a key of ``FLOORS``) a module belongs to."""
    parts = module.split(".")
    if parts[0] != "harness" or len(parts) == 1:
        return parts[0]
    return ".".join(parts[:2])


def _part_imports() -> Iterator[tuple[str, str, Import]]:
    """(importer part, target part, import) of every import that runs between two parts."""
    for imp in ours():
        if imp.type_checking:  # annotations may name a higher part's types; they never run
            continue
        importer, target = _part(imp.importer), _part(imp.target)
        if importer != target:
            yield importer, target, imp


def test_every_part_has_a_floor() -> None:
    assert {_part(module) for module in MODULES} - FLOORS.keys() == set()


def test_parts_import_only_lower_floors() -> None:
    broken = [
        f"{_where(imp)}: {importer} (floor {FLOORS[importer]}) may not import {target} (floor {FLOORS[target]})"
        for importer, target, imp in _part_imports()
        if FLOORS[target] >= FLOORS[importer]
    ]
    assert broken == []


def test_no_import_cycles_between_parts() -> None:
    graph: dict[str, set[str]] = {part: set() for part in FLOORS}
    for importer, target, _ in _part_imports():
        graph[importer].add(target)
    assert _cycles(graph) == []


def test_the_mcp_sdk_stays_behind_its_extra() -> None:
    sdk = [
        _where(imp)
        for imp in all_imports()
        if imp.target.split(".")[0] in MCP_SDK and not any(_within(imp.importer, u) for u in MCP_SDK_USERS)
    ]
    server = [
        _where(imp)
        for imp in ours()
        if _within(imp.target, "harness.mcp") and not any(_within(imp.importer, u) for u in HARNESS_MCP_USERS)
    ]
    assert sdk == [] and server == []


def test_gated_tools_are_put_together_in_one_place() -> None:
    builders = [
        _where(imp)
        for imp in ours()
        if GATED_BUILDERS & set(imp.names) and imp.importer not in GATE_ASSEMBLY and not imp.type_checking
    ]
    assert builders == []


def test_no_private_module_is_imported_from_another_package() -> None:
    broken = []
    for imp in ours():
        private = [i for i, part in enumerate(imp.target.split(".")) if part.startswith("_") and part != "__init__"]
        if private:
            owner = ".".join(imp.target.split(".")[: private[0]])
            if not _within(_package(imp.importer), owner):
                broken.append(_where(imp))
    assert broken == []


def _defined_in(module: str, name: str) -> bool:
    """Whether ``name`` is defined (not imported) at the top level of ``module``."""
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and node.name == name:
            return True
        targets = (
            node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        )
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            return True
    return False


def test_no_private_name_is_imported_from_another_module() -> None:
    broken = [
        _where(imp)
        for imp in ours()
        for name in imp.names
        if name.startswith("_")
        and not name.startswith("__")
        and imp.target != imp.importer
        and not (
            imp.target.rpartition(".")[2].startswith("_") and _within(_package(imp.importer), _package(imp.target))
        )
    ]
    assert broken == []


def _origin(module: str, name: str, seen: frozenset[str] = frozenset()) -> str:
    """The module that defines ``name`` when ``module`` is a package re-exporting it."""
    if MODULES[module].name != "__init__.py" or module in seen:
        return module
    for imp in ours():
        if imp.importer == module and name in imp.names and imp.target in MODULES:
            return _origin(imp.target, name, seen | {module})
    return module


def _graph() -> dict[str, set[str]]:
    """Module -> modules it runs imports of. ``from package import Name`` points at the module
    that defines ``Name`` (a package's ``__init__`` only re-exports), so a submodule importing
    a sibling through its package is not mistaken for a cycle with the package."""
    graph: dict[str, set[str]] = {module: set() for module in MODULES}
    for imp in ours():
        if imp.type_checking:
            continue
        target = imp.target
        while target and target not in MODULES:
            target = target.rpartition(".")[0]
        if not target:
            continue
        targets = {_origin(target, name) for name in imp.names} if imp.names else {target}
        graph[imp.importer] |= targets - {imp.importer}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                item = stack.pop()
                on_stack.discard(item)
                component.append(item)
                if item == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_cycles_between_modules() -> None:
    cycles = [cycle for cycle in _cycles(_graph()) if frozenset(cycle) not in KNOWN_CYCLES]
    assert cycles == []


def test_the_rules_catch_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [["a", "b"]]


# The optional agent frameworks (top-level modules) and the one adapter module that may import each.
FRAMEWORKS = {
    "agents": "harness.adapters.openai_agents",
    "pydantic_ai": "harness.adapters.pydantic_ai",
    "pydantic_core": "harness.adapters.pydantic_ai",
    "deepagents": "harness.adapters.deepagents",
    "langchain": "harness.adapters.deepagents",
    "langchain_core": "harness.adapters.deepagents",
    "langgraph": "harness.adapters.deepagents",
}


def test_only_the_adapters_import_the_adapters() -> None:
    broken = [
        _where(imp)
        for imp in ours()
        if _within(imp.target, "harness.adapters") and not _within(imp.importer, "harness.adapters")
    ]
    assert broken == []


def test_each_framework_is_imported_by_its_adapter_only() -> None:
    broken = [
        _where(imp)
        for imp in all_imports()
        if imp.target.split(".")[0] in FRAMEWORKS and imp.importer != FRAMEWORKS[imp.target.split(".")[0]]
    ]
    assert broken == []


def _documented_parts() -> dict[str, tuple[int, set[str]]]:
    """ARCHITECTURE.md's table of parts: part -> (floor, the parts it imports)."""
    rows: dict[str, tuple[int, set[str]]] = {}
    in_table = False
    for line in (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8").splitlines():
        if line.startswith("| part | floor |"):
            in_table = True
            continue
        if in_table and not line.startswith("|"):
            break
        if in_table and not line.startswith("|---"):
            cells = [cell.strip() for cell in line.strip("|").split("|")]
            imports = {name.strip().strip("`") for name in cells[3].split(",")} - {"—"}
            rows[cells[0].strip("`")] = (int(cells[1]), imports)
    return rows


def test_the_architecture_document_tells_the_truth() -> None:
    documented = _documented_parts()
    actual: dict[str, set[str]] = {part: set() for part in FLOORS}
    for importer, target, _ in _part_imports():
        actual[importer].add(target)
    assert {part: floor for part, (floor, _) in documented.items()} == FLOORS
    wrong = {
        part: {"missing from the table": sorted(actual[part] - listed), "not imported": sorted(listed - actual[part])}
        for part, (_, listed) in documented.items()
        if listed != actual[part]
    }
    assert wrong == {}


def test_documents_cited_exist() -> None:
    """Code and documents cite only documents that are in the repository (``SKILL.md`` and
    ``AGENTS.md`` are files skills and workspaces hold, not documents of this one)."""
    cited = re.compile(r"\b([A-Z][A-Z_]+\.md)\b|\b(DESIGN) §")
    missing = []
    bench = [p for p in (ROOT / "bench").rglob("*") if ".peers" not in p.relative_to(ROOT).parts]  # installed peers
    for path in [*MODULES.values(), *ROOT.glob("*.md"), *(ROOT / "tests").rglob("*.py"), *bench]:
        if path.suffix not in (".py", ".md"):
            continue
        for match in cited.finditer(path.read_text(encoding="utf-8")):
            name = match[1] or match[2]
            if name in ("SKILL.md", "AGENTS.md"):
                continue
            if not (ROOT / name).exists() and not (path.parent / name).exists():
                missing.append(f"{path.relative_to(ROOT)} cites {name}")
    assert missing == []


# Extensions of file names that read like ``Class.member`` (``SKILL.md``): not code names.
FILE_SUFFIXES = frozenset({"md", "py", "json", "yaml", "yml", "toml", "txt", "lock", "sh", "db"})
# Members every class of these external bases has (``Enum.value``, an exception's ``args``).
EXTERNAL_BASES: dict[str, type] = {
    **{name: kind for name, kind in vars(builtins).items() if isinstance(kind, type)},
    "Enum": enum.Enum,
    "StrEnum": enum.StrEnum,
    "IntEnum": enum.IntEnum,
}
_FENCE = re.compile(r"^[ \t]*```.*?^[ \t]*```[ \t]*$", re.M | re.S)
_CODE_SPAN = re.compile(r"`([^`]+)`")
_CITED_MEMBER = re.compile(r"([A-Z]\w*)\.([A-Za-z_]\w*)(?:\(.*\))?")


@functools.cache
def _classes() -> dict[str, list[ast.ClassDef]]:
    """Every class of the packages by name (parsed, not imported)."""
    found: dict[str, list[ast.ClassDef]] = {}
    for path in MODULES.values():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                found.setdefault(node.name, []).append(node)
    return found


def _own_members(node: ast.ClassDef) -> set[str]:
    """What a class defines: methods, class attributes and fields, nested classes, and the
    attributes its methods set on ``self``."""
    members: set[str] = set()
    for item in node.body:
        if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            members.add(item.name)
        elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
            members.add(item.target.id)
        elif isinstance(item, ast.Assign):
            members.update(t.id for t in item.targets if isinstance(t, ast.Name))
    for inner in ast.walk(node):
        targets = (
            inner.targets
            if isinstance(inner, ast.Assign)
            else [inner.target]
            if isinstance(inner, ast.AnnAssign)
            else []
        )
        for target in targets:
            for part in ast.walk(target):
                if isinstance(part, ast.Attribute) and isinstance(part.value, ast.Name) and part.value.id == "self":
                    members.add(part.attr)
    return members


def _base_names(node: ast.ClassDef) -> list[str]:
    names = []
    for base in node.bases:
        while isinstance(base, ast.Subscript):
            base = base.value
        if isinstance(base, ast.Name):
            names.append(base.id)
        elif isinstance(base, ast.Attribute):
            names.append(base.attr)
    return names


def _has_member(class_name: str, member: str, seen: frozenset[str] = frozenset()) -> bool:
    """Whether the class ``class_name`` of the packages, or a class it derives from, has ``member``."""
    for node in _classes().get(class_name, []):
        if member in _own_members(node):
            return True
        for base in _base_names(node):
            if base in seen or base == class_name:
                continue
            if base in _classes():
                if _has_member(base, member, seen | {class_name}):
                    return True
            elif any(member in vars(kind) for kind in getattr(EXTERNAL_BASES.get(base), "__mro__", ())):
                return True
    return False


def test_code_names_cited_exist() -> None:
    """Every ``Class.member`` (or ``Class.member(...)``) a document cites in backticks names a
    class of the packages that has that member, its own or inherited."""
    pages = [ROOT / "README.md", ROOT / "ARCHITECTURE.md", *sorted((ROOT / "docs").rglob("*.md"))]
    missing = []
    for page in pages:
        text = _FENCE.sub("", page.read_text(encoding="utf-8"))
        for span in _CODE_SPAN.finditer(text):
            cited = _CITED_MEMBER.fullmatch(span[1])
            if cited is None or cited[2] in FILE_SUFFIXES:
                continue
            class_name, member = cited[1], cited[2]
            if class_name not in _classes():
                missing.append(f"{page.relative_to(ROOT)} cites {span[1]!r}: no class {class_name} in the packages")
            elif not _has_member(class_name, member):
                missing.append(f"{page.relative_to(ROOT)} cites {span[1]!r}: {class_name} has no {member}")
    assert missing == []


def test_the_code_names_check_catches_a_missing_member() -> None:
    assert _has_member("TurnPlan", "shadowed_skills") and _has_member("Harness", "aclose")  # inherited
    assert _has_member("SkillPipeline", "filesystem") and _has_member("Layer", "value")  # an Enum's
    assert not _has_member("Harness", "_tools") and not _has_member("TurnPlan", "prepare")
