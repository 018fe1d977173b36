"""The distribution's version: the one place it is written (``pyproject.toml`` reads it from here),
so ``harness.__version__`` and ``harness --version`` need no package metadata lookup at import."""

__version__ = "0.1.0"
