"""``harness.yaml``: the options of an agent, read and checked; ``Harness.from_config`` builds it.

:func:`load_config` reads the file against one typed schema (:class:`ConfigFile`): every key is
checked when the file is read, a wrong type names the key's path and what it expects
(``max_steps must be an integer ≥ 1, got 'lots'``), and an unknown key is refused with the
closest known one (``unknown keys nmae (did you mean name?)``). Relative paths are resolved
against the file's folder. The result is a :class:`HarnessConfig`.

Editors that read JSON Schema (VS Code with the YAML extension, JetBrains IDEs, Neovim with
yaml-language-server) complete and check the file when its first line names the schema::

    # yaml-language-server: $schema=harness.schema.json

The schema ships with the package as ``harness/harness.schema.json``; ``python -m harness.config
> harness.schema.json`` writes a copy next to ``harness.yaml`` (the line takes a path relative to
the file, or a URL). :func:`json_schema` returns it.
"""

from typing import TYPE_CHECKING

from filesystems import lazy_exports
from harness.config.config import HarnessConfig, SessionsConfig

if TYPE_CHECKING:  # the reader and its schema load on first use: building an agent without a file needs neither
    from harness.config.loader import load_config
    from harness.config.problems import UnexpectedValue, UnknownKeys
    from harness.config.schema import ConfigFile, json_schema

__all__ = [
    "ConfigFile",
    "HarnessConfig",
    "SessionsConfig",
    "UnexpectedValue",
    "UnknownKeys",
    "json_schema",
    "load_config",
]

__getattr__, __dir__ = lazy_exports(__name__)
