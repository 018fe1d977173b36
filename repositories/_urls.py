"""Reading the options of a market URL: shared by every backend's ``from_url``.

Options arrive as strings (in the fragment, or the query for ``mysql://`` and ``nacos://``);
each backend pops the ones it knows and calls :func:`no_more` so that a misspelt option is an
error rather than silently ignored.
"""

from __future__ import annotations

import urllib.parse

from filesystems import redact_url
from repositories.errors import InvalidRepositoryConfig

__all__ = ["flag", "no_more", "number", "split_fragment"]

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def flag(options: dict[str, str], key: str, default: bool) -> bool:
    """Pop the boolean option ``key`` (``true``/``false``, ``1``/``0``, ``yes``/``no``, ``on``/``off``)."""
    value = options.pop(key, None)
    if value is None:
        return default
    if value.lower() in _TRUE:
        return True
    if value.lower() in _FALSE:
        return False
    raise InvalidRepositoryConfig(f"option {key}={value!r} must be true or false")


def number(options: dict[str, str], key: str, default: float) -> float:
    """Pop the numeric option ``key``."""
    value = options.pop(key, None)
    try:
        return default if value is None else float(value)
    except ValueError as exc:
        raise InvalidRepositoryConfig(f"option {key}={value!r} must be a number") from exc


def no_more(url: str, options: dict[str, str]) -> None:
    """Refuse the options left over: nobody knows them."""
    if options:
        raise InvalidRepositoryConfig(f"unknown option(s) {', '.join(sorted(options))} in {redact_url(url)!r}")


def split_fragment(url: str) -> tuple[str, dict[str, str]]:
    """``url`` without its fragment, and the fragment's options."""
    base, _, fragment = url.partition("#")
    return base, dict(urllib.parse.parse_qsl(fragment, keep_blank_values=True))
