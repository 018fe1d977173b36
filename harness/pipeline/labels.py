"""Short market labels: the source names the catalog shows in place of long market slugs.

A market's slug (``git-<owner>-<repo>[-<branch>]``, up to 64 characters) is its skills' source
in their ids (``<name>_<source>``), and it stays so: usage counters, learning, MCP
and events keep the full id. The catalog shows a short *label* per market instead, and the
load tool accepts ``<name>_<label>`` as an alias of the full id.

A label is the shortest run of the slug's leading words (``-``-separated, the kind prefix such
as ``git`` or ``mysql`` dropped) that no other configured market's slug starts with in the same
words; a slug without a shorter unique run is its own label. Labels depend only on the
configured markets' slugs, so they are stable as long as the configuration is, and they never
equal another source (a market slug, ``global…``, ``workspace``, ``workspace-namespaced``), so
an alias never names a different skill than the full id it stands for.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

__all__ = ["SourceLabels"]

#: First words of derived slugs that say what kind of market it is, not which one.
_KINDS = frozenset({"dir", "git", "mcp", "mysql", "nacos", "pkg", "plugins"})
#: The sources of the folder layers: no market label may be one of them.
_LAYER_SOURCES = frozenset({"workspace", "workspace-namespaced"})


@dataclass(frozen=True, slots=True)
class SourceLabels:
    """The short label of each market slug (``by_slug``); other sources show as they are."""

    by_slug: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def for_markets(cls, slugs: Sequence[str]) -> SourceLabels:
        """The labels of the markets ``slugs`` (unique, as ``disambiguate_sources`` makes them)."""
        words = {slug: _words(slug) for slug in slugs}
        labels: dict[str, str] = {}
        for slug in slugs:
            labels[slug] = next(
                (
                    label
                    for count in range(1, len(words[slug]) + 1)
                    if len(label := "-".join(words[slug][:count])) < len(slug)
                    and not label.startswith(".")
                    and not _taken(label, count, slug, words)
                ),
                slug,
            )
        return cls({slug: label for slug, label in labels.items() if label != slug})

    def label(self, source: str) -> str:
        """How the catalog shows the source ``source``: a market's label, a plugin's source
        (``<market slug>.<plugin>``) with its market's label, anything else unchanged."""
        for slug, label in self.by_slug.items():
            if source == slug or source.startswith(f"{slug}."):
                return label + source[len(slug) :]
        return source

    def full_ids(self, short_id: str) -> Iterator[str]:
        """The full skill ids ``short_id`` may stand for when it spells a source by its label."""
        for slug, label in self.by_slug.items():
            marker = f"_{label}"
            at = short_id.find(marker)
            while at > 0:
                rest = short_id[at + len(marker) :]
                if not rest or rest.startswith("."):
                    yield f"{short_id[:at]}_{slug}{rest}"
                at = short_id.find(marker, at + 1)


def _words(slug: str) -> list[str]:
    words = [word for word in slug.split("-") if word]
    return words[1:] if len(words) > 1 and words[0] in _KINDS else words


def _taken(label: str, count: int, slug: str, words: Mapping[str, list[str]]) -> bool:
    """Whether ``label`` (``count`` words of ``slug``) could be mistaken for another source."""
    if label in _LAYER_SOURCES or label.startswith("global"):
        return True
    return any(
        other != slug and (other == label or other.startswith(f"{label}.") or "-".join(theirs[:count]) == label)
        for other, theirs in words.items()
    )
