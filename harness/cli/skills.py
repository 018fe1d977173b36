"""``harness skills ...``: validate, list, show, prompt and stage skills."""

from __future__ import annotations

import argparse

__all__ = ["register"]


def register(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """Add the ``skills`` command group."""
    parser = sub.add_parser("skills", help="validate, list, show and stage skills")
    parser.set_defaults(handler=lambda args: 0)
