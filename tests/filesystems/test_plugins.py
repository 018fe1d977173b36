"""The one registry mechanism behind store schemes, filesystem modes, market schemes and model
providers: lazy built-ins, registration, entry points, and what its errors say."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from filesystems import Registry
from filesystems.plugins import _type_checking_imports

ROOT = Path(__file__).resolve().parents[2]

Widget = Callable[[], str]


class WidgetUnavailable(Exception):
    """What the test registries raise when a widget's dependency is missing."""


def _group() -> str:
    return f"harness.test-widgets-{uuid.uuid4().hex[:8]}"


def _module(folder: Path, source: str) -> str:
    """A throw-away module in ``folder`` (already on ``sys.path``); its name."""
    name = f"widget_{uuid.uuid4().hex[:8]}"
    (folder / f"{name}.py").write_text(textwrap.dedent(source))
    return name


def _distribution(folder: Path, name: str, entry_points: str) -> None:
    """An installed distribution as far as ``importlib.metadata`` can tell: a dist-info folder."""
    info = folder / f"{name.replace('-', '_')}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(entry_points)


@pytest.fixture
def on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def test_built_in_backends_are_imported_when_first_opened_not_before() -> None:
    script = """
        import sys
        import filesystems, repositories

        LAZY = ("filesystems.stores.mysql", "repositories.mysql", "repositories.nacos", "repositories.mcp")
        print(*[m for m in LAZY if m in sys.modules])
        filesystems.open_store("mysql://user@127.0.0.1:3306/db")
        print(*[m for m in LAZY if m in sys.modules])
        repositories.open_repository("nacos://127.0.0.1:8848/public?skills=a")
        print(*[m for m in LAZY if m in sys.modules])
        print(repositories.MySQLRepository.__module__, filesystems.MySQLKeyValueStore.__module__)
    """
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "",
        "filesystems.stores.mysql",
        "filesystems.stores.mysql repositories.nacos",
        "repositories.mysql filesystems.stores.mysql",
    ]


def test_a_lazy_target_is_imported_on_first_lookup_only(on_path: Path) -> None:
    module = _module(on_path, "def make():\n    return 'made'\n")
    registry: Registry[Widget] = Registry("widget", _group(), {"lazy": f"{module}:make"})
    assert module not in sys.modules
    assert "lazy" in registry.known() and module not in sys.modules
    assert registry.factory("LAZY")() == "made"
    assert module in sys.modules


def test_an_unknown_name_lists_the_known_ones() -> None:
    registry: Registry[Widget] = Registry("widget", _group(), {"spanner": lambda: "s", "bolt": lambda: "b"})
    with pytest.raises(ValueError, match=r"unknown widget 'nut'; known: bolt, spanner"):
        registry.factory("nut")


def test_the_owner_chooses_the_unknown_error() -> None:
    registry: Registry[Widget] = Registry(
        "widget", _group(), {"bolt": lambda: "b"}, unknown=lambda name, known: LookupError(f"{name} not in {known}")
    )
    with pytest.raises(LookupError, match=r"nut not in \['bolt'\]"):
        registry.factory("nut")


def test_a_missing_dependency_names_the_extra_to_install(on_path: Path) -> None:
    module = _module(on_path, "import widget_sdk_that_is_not_installed\ndef make():\n    return 'x'\n")
    registry: Registry[Widget] = Registry(
        "widget", _group(), {"fancy": f"{module}:make [fancy]"}, unavailable=WidgetUnavailable
    )
    with pytest.raises(WidgetUnavailable) as caught:
        registry.factory("fancy")
    message = str(caught.value)
    assert "'widget_sdk_that_is_not_installed'" in message
    assert "pip install 'agent-skill-harness[fancy]'" in message


def test_a_missing_dependency_without_an_extra_is_named_plainly(on_path: Path) -> None:
    module = _module(on_path, "import widget_sdk_that_is_not_installed\ndef make():\n    return 'x'\n")
    registry: Registry[Widget] = Registry("widget", _group(), {"plain": f"{module}:make"})
    with pytest.raises(ValueError, match="needs the module 'widget_sdk_that_is_not_installed'") as caught:
        registry.factory("plain")
    assert "pip install" not in str(caught.value)


def test_a_target_whose_module_is_gone_is_a_broken_plugin_not_a_missing_extra() -> None:
    registry: Registry[Widget] = Registry(
        "widget", _group(), {"gone": "widget_module_that_does_not_exist:make [fancy]"}, unavailable=WidgetUnavailable
    )
    with pytest.raises(ValueError, match="cannot load the widget plug-in") as caught:
        registry.factory("gone")
    assert not isinstance(caught.value, WidgetUnavailable)


def test_a_target_that_is_not_callable_is_refused(on_path: Path) -> None:
    module = _module(on_path, "make = 42\n")
    registry: Registry[Widget] = Registry("widget", _group(), {"odd": f"{module}:make"})
    with pytest.raises(ValueError, match="is not callable"):
        registry.factory("odd")


def test_register_adds_a_name_and_replace_is_needed_to_take_a_known_one() -> None:
    registry: Registry[Widget] = Registry("widget", _group(), {"bolt": lambda: "built in"})
    registry.register("Nut", lambda: "nut")
    assert registry.known() == ["bolt", "nut"]
    assert registry.factory("nut")() == "nut"
    for taken in ("bolt", "nut"):
        with pytest.raises(ValueError, match="already registered; pass replace=True"):
            registry.register(taken, lambda: "again")
    registry.register("bolt", lambda: "replaced", replace=True)
    assert registry.factory("bolt")() == "replaced"


def test_register_refuses_a_malformed_name() -> None:
    registry: Registry[Widget] = Registry("widget", _group(), {})
    for bad in ("", "1st", "a b", "a:b"):
        with pytest.raises(ValueError, match="invalid widget"):
            registry.register(bad, lambda: "x")


def test_an_installed_distribution_advertises_names_through_its_entry_points(on_path: Path) -> None:
    group = _group()
    module = _module(on_path, "def make():\n    return 'from the plug-in'\n")
    registry: Registry[Widget] = Registry("widget", group, {"bolt": lambda: "b"})
    assert registry.known() == ["bolt"]
    _distribution(on_path, "acme-widgets", f"[{group}]\nSpanner = {module}:make\n")
    assert registry.known() == ["bolt", "spanner"]
    assert registry.factory("spanner")() == "from the plug-in"


def test_an_advertised_entry_points_missing_extra_names_its_own_distribution(on_path: Path) -> None:
    group = _group()
    module = _module(on_path, "import widget_sdk_that_is_not_installed\ndef make():\n    return 'x'\n")
    _distribution(on_path, "acme-widgets", f"[{group}]\nspanner = {module}:make [turbo]\n")
    registry: Registry[Widget] = Registry("widget", group, {}, unavailable=WidgetUnavailable)
    with pytest.raises(WidgetUnavailable, match=r"pip install 'acme-widgets\[turbo\]'"):
        registry.factory("spanner")


def _parsed_type_checking_imports(source: str, package: str) -> dict[str, tuple[str, str]]:
    """What ``lazy_exports`` must find, read off the parsed module."""
    found: dict[str, tuple[str, str]] = {}
    for node in ast.parse(source).body:
        if not (isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"):
            continue
        for inner in node.body:
            if isinstance(inner, ast.ImportFrom) and inner.module is not None:
                parts = package.split(".")
                base = parts[: len(parts) - max(inner.level - 1, 0)]
                module = inner.module if not inner.level else ".".join([*base, inner.module])
                for alias in inner.names:
                    found[alias.asname or alias.name] = (module, alias.name)
    return found


def _package_inits() -> list[Path]:
    return sorted(p for top in ("harness", "repositories", "filesystems") for p in (ROOT / top).rglob("__init__.py"))


@pytest.mark.parametrize("init", _package_inits(), ids=lambda p: str(p.relative_to(ROOT)))
def test_lazy_exports_reads_each_package_as_the_parser_does(init: Path) -> None:
    package = ".".join(init.parent.relative_to(ROOT).parts)
    source = init.read_text(encoding="utf-8")
    assert _type_checking_imports(source, package) == _parsed_type_checking_imports(source, package)


def test_lazy_exports_reads_aliases_relative_imports_comments_and_continued_lines() -> None:
    source = textwrap.dedent(
        """\
        from typing import TYPE_CHECKING
        from a.b import NotLazy

        if TYPE_CHECKING:  # a comment
            # another
            from .c import (  # open
                One,
                Two as Deux,  # renamed
            )
            from ..d import Three
            from e.f import Four, \\
                Five as Cinq
            import g
            from . import h

        def after() -> None:
            from x import Nope
        if TYPE_CHECKING:
            from z import Last
        """
    )
    expected = {
        "One": ("pkg.sub.c", "One"),
        "Deux": ("pkg.sub.c", "Two"),
        "Three": ("pkg.d", "Three"),
        "Four": ("e.f", "Four"),
        "Cinq": ("e.f", "Five"),
        "Last": ("z", "Last"),
    }
    assert _parsed_type_checking_imports(source, "pkg.sub") == expected
    assert _type_checking_imports(source, "pkg.sub") == expected
