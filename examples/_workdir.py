"""How every example runs: ``main(workdir)`` in the folder named on the command line, else a
temporary folder removed afterwards. Run an example as ``python examples/<name>.py [DIR]``."""

from __future__ import annotations

import asyncio
import importlib
import sys
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path


def run_in_workdir(main: Callable[[Path], Awaitable[None]], *, traversable: bool = False) -> None:
    """Run ``main`` in ``sys.argv[1]`` (created if missing) or in a fresh temporary folder.

    ``traversable`` opens the temporary folder to other users (``0755``), as a sandbox that runs
    commands as an unprivileged uid must reach the workspace inside it.
    """
    if len(sys.argv) > 1:
        target = Path(sys.argv[1]).resolve()
        target.mkdir(parents=True, exist_ok=True)
        asyncio.run(main(target))
        return
    with tempfile.TemporaryDirectory() as tmp:
        if traversable:
            Path(tmp).chmod(0o755)
        asyncio.run(main(Path(tmp)))


def require(module: str, what: str) -> None:
    """Exit cleanly, saying what to install, when the optional ``module`` cannot be imported."""
    try:
        importlib.import_module(module)
    except ImportError:
        print(f"skipped: this example needs {what}")
        sys.exit(0)
