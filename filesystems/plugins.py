"""Named factories for the CLI and configuration files: built in, registered in code, or
advertised by installed packages through an entry-point group.

One :class:`Registry` serves every kind of name the project resolves from a string: store
schemes and filesystem modes (``filesystems.registry``), market URL schemes
(``repositories.registry``) and model providers (``harness.models.registry``).

A built-in is the factory itself or, so that its module is imported the first time the name is
used, a *target* in entry-point syntax: ``"package.module:attr"``, optionally followed by the
extras its module needs, ``"package.module:attr [extra]"``. Third-party packages advertise
theirs the same way, as entry points of the registry's group (name = the name, value = the
target). A module that cannot be imported because a dependency is missing gives an error that
names the extra to install (``pip install 'agent-skill-harness[extra]'``).

:func:`lazy_exports` is the same idea for a package's names: a package lists the names it
exports without importing their modules once, as imports under ``if TYPE_CHECKING:`` (so type
checkers and readers see where each comes from), and sets
``__getattr__, __dir__ = lazy_exports(__name__)``. The first lookup of such a name reads that
block from the package's source (once) and imports the one module that defines it.
"""

from __future__ import annotations

import importlib
import re
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast

if TYPE_CHECKING:  # imported where entry points are read: package metadata costs ~20 ms at import
    import importlib.metadata

__all__ = ["Registry", "lazy_exports"]

_DISTRIBUTION = "agent-skill-harness"  # whose extras built-in targets name

F = TypeVar("F")

_NAME = r"[A-Za-z][A-Za-z0-9+.-]*"  # compiled by ``re`` on the first registration

ErrorFactory = Callable[[str], Exception]


def _target(name: str, value: str, group: str) -> importlib.metadata.EntryPoint:
    import importlib.metadata

    return importlib.metadata.EntryPoint(name=name, value=value, group=group)


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


class Registry(Generic[F]):
    """Names → factories of one kind, looked up case-insensitively.

    ``what`` names the kind in messages (``"store scheme"``); ``group`` is the entry-point group
    third parties advertise in, read when a name is neither built in nor registered (never at
    import time, and again each time, so packages installed later are found). ``builtin`` maps
    names to factories or to lazy targets (see the module docstring).

    Errors are built by the owner so that each kind keeps its own error types: ``error`` for a
    malformed or taken name and a plug-in that cannot be loaded, ``unavailable`` for a module
    whose dependency is missing (default ``error``), ``unknown`` for a name nobody provides,
    given the name and the known names (default: ``error`` with a message listing them).
    Messages show only the name, never the rest of a URL, which may hold a password.
    """

    def __init__(
        self,
        what: str,
        group: str,
        builtin: Mapping[str, F | str],
        *,
        error: ErrorFactory = ValueError,
        unavailable: ErrorFactory | None = None,
        unknown: Callable[[str, Sequence[str]], Exception] | None = None,
    ) -> None:
        self.what = what
        self.group = group
        self._builtin = {name.lower(): (name, value) for name, value in builtin.items()}
        self._error = error
        self._unavailable = unavailable or error
        self._unknown = unknown or self._unknown_name
        self._factories: dict[str, F] = {}  # registered in code, or loaded once

    def register(self, name: str, factory: F, *, replace: bool = False) -> None:
        """Make ``name`` build with ``factory``.

        Raises ``error`` for a malformed name, or one already known (built in, registered or
        advertised) unless ``replace``.
        """
        name = name.lower()
        if not re.fullmatch(_NAME, name):
            raise self._error(f"invalid {self.what} {name!r}")
        if not replace and name in self.known():
            raise self._error(f"{self.what} {name!r} is already registered; pass replace=True to override it")
        self._factories[name] = factory

    def known(self) -> list[str]:
        """Every name, sorted: built in, registered and advertised by installed packages."""
        return sorted({*self._builtin, *self._factories, *self._advertised()})

    def factory(self, name: str) -> F:
        """The factory of ``name``, importing its module on first use.

        Raises ``unknown`` for a name nobody provides, ``unavailable`` when the module's
        dependency is missing, ``error`` when the module cannot be loaded or holds no callable.
        """
        name = name.lower()
        found = self._factories.get(name)
        if found is not None:
            return found
        builtin = self._builtin.get(name)
        if builtin is not None:
            spelled, value = builtin
            factory = self._load(name, _target(spelled, value, self.group)) if isinstance(value, str) else value
        else:
            entry = self._advertised().get(name)
            if entry is None:
                raise self._unknown(name, self.known())
            factory = self._load(name, entry)
        self._factories[name] = factory
        return factory

    def _advertised(self) -> dict[str, importlib.metadata.EntryPoint]:
        import importlib.metadata

        return {entry.name.lower(): entry for entry in importlib.metadata.entry_points(group=self.group)}

    def _unknown_name(self, name: str, known: Sequence[str]) -> Exception:
        return self._error(f"unknown {self.what} {name!r}; known: {', '.join(known)}")

    def _load(self, name: str, entry: importlib.metadata.EntryPoint) -> F:
        try:
            loaded = entry.load()
        except ModuleNotFoundError as exc:
            if exc.name and not _within(entry.module, exc.name):
                raise self._unavailable(self._missing(name, entry, exc.name)) from exc
            raise self._error(f"cannot load the {self.what} plug-in {entry.value!r} for {name!r}: {exc}") from exc
        except Exception as exc:  # a broken plug-in must not look like a missing one
            raise self._error(f"cannot load the {self.what} plug-in {entry.value!r} for {name!r}: {exc}") from exc
        if not callable(loaded):
            raise self._error(f"the {self.what} plug-in {entry.value!r} for {name!r} is not callable")
        return cast(F, loaded)

    def _missing(self, name: str, entry: importlib.metadata.EntryPoint, module: str) -> str:
        message = f"the {self.what} {name!r} needs the module {module!r}, which is not installed"
        if not entry.extras:
            return message
        distribution = entry.dist.name if entry.dist is not None else _DISTRIBUTION
        return f"{message}: pip install '{distribution}[{','.join(entry.extras)}]'"


def _statements(source: str) -> Iterator[str]:
    """The statements of the top-level ``if TYPE_CHECKING:`` blocks of ``source``, each joined
    onto one line without its comments."""
    for block in f"\n{source}".split("\nif TYPE_CHECKING:")[1:]:
        head, *lines = block.splitlines()
        if head.strip() and not head.lstrip().startswith("#"):
            continue  # a statement on the ``if`` line: a shape the package files do not use
        statement = ""
        for line in lines:
            code = line.split("#", 1)[0].rstrip()  # an import statement holds no string
            if code and not code[0].isspace() and not statement:
                break  # the block ends
            continued = code.endswith("\\")
            statement = " ".join(filter(None, (statement, code.removesuffix("\\").strip())))
            if statement and not continued and statement.count("(") == statement.count(")"):
                yield statement
                statement = ""


def _type_checking_imports(source: str, package: str) -> dict[str, tuple[str, str]]:
    """Name -> (defining module, its name there) of every ``from ... import`` under
    ``if TYPE_CHECKING:``.

    Reads the lines rather than parsing the module, which costs more than the rest of a small
    package's import; the package ``__init__`` files keep the plain shape this reads, which a
    test checks against the parsed module for each of them.
    """
    found: dict[str, tuple[str, str]] = {}
    for statement in _statements(source):
        head, imports, names = statement.partition(" import ")
        module = head.removeprefix("from ").strip()
        absolute = module.lstrip(".")
        if not imports or not head.startswith("from ") or not absolute:
            continue
        if level := len(module) - len(absolute):
            parts = package.split(".")
            absolute = ".".join([*parts[: len(parts) - (level - 1)], absolute])
        for alias in names.strip().removeprefix("(").removesuffix(")").split(","):
            original, _, asname = (part.strip() for part in alias.partition(" as "))
            if original:
                found[asname or original] = (absolute, original)
    return found


def lazy_exports(package: str) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package`` that import its ``TYPE_CHECKING``
    names on first use (each is then cached in the package's namespace)."""
    targets: dict[str, tuple[str, str]] | None = None

    def lazy() -> dict[str, tuple[str, str]]:
        nonlocal targets
        if targets is None:
            module = sys.modules[package]
            targets = _type_checking_imports(Path(str(module.__file__)).read_text(encoding="utf-8"), package)
        return targets

    def __getattr__(name: str) -> Any:
        target = lazy().get(name)
        if target is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, original = target
        value = getattr(importlib.import_module(module), original)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *lazy()})

    return __getattr__, __dir__
