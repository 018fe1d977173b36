"""How big the scale tests run: a size that proves the behaviour on every test run, and the full
size on demand.

A scale test (thousands of skills, thousands of generated documents, many concurrent turns)
guards behaviour that only shows past some size: a catalog that must be cut, a search that must
still find one skill among many, a parser that must agree with the reference on odd input. The
default size is chosen to be well past that point, so the test can still fail for what it guards;
``pytest --large`` (or ``HARNESS_TEST_LARGE=1``, which reaches the test's subprocesses too) runs
the full size, as before a release or after a change to the code the test guards.
"""

from __future__ import annotations

import os

__all__ = ["LARGE_ENV", "large", "sized"]

LARGE_ENV = "HARNESS_TEST_LARGE"


def large() -> bool:
    """Whether this run asked for the full sizes (``--large`` or ``HARNESS_TEST_LARGE=1``)."""
    return os.environ.get(LARGE_ENV, "").lower() in {"1", "true", "yes"}


def sized(default: int, *, full: int) -> int:
    """``full`` in a ``--large`` run, ``default`` otherwise."""
    if default > full:
        raise ValueError(f"the default size {default} is larger than the full size {full}")
    return full if large() else default
