"""Source slugs: the short name a repository's skills carry in their skill id.

A slug is lowercase ``[a-z0-9._-]``, at most 64 characters. Backends derive one from what they
are (``git-<owner>-<repo>[-<branch>]``, ``mysql-<db>-<table>``, ``pkg-<package>``,
``dir-<folder>``); callers may override it with ``source=``. The skills of a plugin
marketplace carry ``<market slug>.<plugin>`` (:func:`sub_source`).
"""

from __future__ import annotations

import logging
import re
import unicodedata
from collections.abc import Iterable

from repositories.errors import InvalidRepositoryConfig

__all__ = [
    "MAX_SOURCE_LENGTH",
    "check_source",
    "disambiguate_sources",
    "exact_sub_source",
    "make_source",
    "sub_source",
]

MAX_SOURCE_LENGTH = 64

_log = logging.getLogger("repositories")
_VALID = re.compile(r"[a-z0-9._-]{1,64}")
_INVALID_RUN = re.compile(r"[^a-z0-9._-]+")
_DASHES = re.compile(r"--+")


def make_source(*parts: str) -> str:
    """Build a slug from ``parts`` joined by ``-``.

    Accents are dropped (``é`` → ``e``), other characters outside ``[a-z0-9._-]`` become ``-``
    (runs collapsed), the result is lowercased,
    trimmed of leading/trailing ``-`` and ``.`` and cut to 64 characters. Never empty: falls back
    to ``"repo"``.
    """
    text = unicodedata.normalize("NFKD", "-".join(part for part in parts if part))
    text = text.encode("ascii", "ignore").decode().lower()
    slug = _DASHES.sub("-", _INVALID_RUN.sub("-", text)).strip("-.")
    slug = slug[:MAX_SOURCE_LENGTH].rstrip("-.")
    return slug or "repo"


def sub_source(source: str, part: str) -> str:
    """The slug of ``part`` of the market ``source`` (a plugin of a plugin marketplace):
    ``<source>.<part as a slug>``, cut to 64 characters (the market's slug is kept whole)."""
    return f"{source}.{make_source(part)}"[:MAX_SOURCE_LENGTH].rstrip("-.")


def exact_sub_source(source: str, part: str) -> str | None:
    """``<source>.<part>`` when ``part`` is its own slug (:func:`sub_source` neither folds nor
    cuts it), else ``None``. Trust matches only this exact slug: ``GOOD``, ``Good`` and ``go od``
    all fold to the slug of a plugin named ``good`` but are never it."""
    exact = f"{source}.{part}"
    return exact if part and sub_source(source, part) == exact else None


def check_source(source: str) -> str:
    """Return ``source`` if it is a valid slug, else raise ``InvalidRepositoryConfig``."""
    # The slug names a folder below .skills-cache: "..", "." or a hidden name would leave it
    # or hide from its clean-up.
    if not isinstance(source, str) or not _VALID.fullmatch(source) or source.startswith("."):
        raise InvalidRepositoryConfig(
            f"invalid source slug {source!r}: use 1-{MAX_SOURCE_LENGTH} characters of "
            "lowercase letters, digits, '.', '_' and '-', not starting with '.'"
        )
    return source


def disambiguate_sources(sources: Iterable[str]) -> list[str]:
    """Make slugs unique in registration order: ``x``, ``x_2``, ``x_3``, ...

    Takes the slugs (e.g. ``[r.source for r in repositories]``) and returns a list of the same
    length. Every renamed duplicate is logged as a warning on the ``repositories`` logger. A
    generated name never collides with a slug given later in the list or with another generated
    one, and stays within 64 characters.
    """
    given = list(sources)
    taken = set(given)
    seen: set[str] = set()
    result: list[str] = []
    for slug in given:
        if slug not in seen:
            seen.add(slug)
            result.append(slug)
            continue
        number = 2
        while True:
            suffix = f"_{number}"
            candidate = slug[: MAX_SOURCE_LENGTH - len(suffix)] + suffix
            if candidate not in taken and candidate not in seen:
                break
            number += 1
        _log.warning(
            "two skill repositories share the source slug %r; the later one is renamed %r "
            "(pass source= to choose a name)",
            slug,
            candidate,
        )
        seen.add(candidate)
        result.append(candidate)
    return result
