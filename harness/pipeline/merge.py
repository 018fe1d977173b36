"""Merge the layers' skills by name: the higher layer wins, whole folder, never silently."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from harness.diagnostics import Diagnostic
from harness.pipeline.layers import LayerEntry, LayerResult

__all__ = ["Merged", "Shadowing", "merge_layers"]


@dataclass(frozen=True, kw_only=True, slots=True)
class Shadowing:
    """A skill hidden by another of the same name."""

    name: str
    winner: LayerEntry
    loser: LayerEntry

    def as_dict(self) -> dict[str, object]:
        """The JSON shape of ``harness skills list --json``'s ``shadowed`` entries."""
        return {"name": self.name, "winner": _ref(self.winner), "loser": _ref(self.loser)}

    def diagnostic(self) -> Diagnostic:
        """The shadowing as an ``info`` diagnostic."""
        winner, loser = self.winner.skill, self.loser.skill
        return Diagnostic.info(
            code="shadowed",
            message=(
                f"skill {self.name!r} from {winner.layer.value} layer ({winner.source}, {winner.location}) "
                f"shadows the one from {loser.layer.value} layer ({loser.source}, {loser.location})"
            ),
            location=winner.location,
        )


@dataclass(frozen=True, kw_only=True, slots=True)
class Merged:
    """The winning entry per name plus every shadowing that happened."""

    entries: dict[str, LayerEntry]
    shadowed: tuple[Shadowing, ...]

    def loadable_losers(self) -> list[LayerEntry]:
        """The shadowed skills their full id still names: those another layer (or a later
        market) shadowed, not a same-id duplicate inside one source, which no id can name."""
        winners = {entry.skill.skill_id for entry in self.entries.values()}
        return [
            s.loser
            for s in self.shadowed
            if s.loser.skill.skill_id != s.winner.skill.skill_id and s.loser.skill.skill_id not in winners
        ]


def merge_layers(layers: Sequence[LayerResult], base: Merged | None = None) -> Merged:
    """Merge ``layers`` in ascending priority on top of ``base``.

    Within one layer two skills with one name: the first in sorted folder order wins. Across
    layers the later one wins.
    """
    entries = dict(base.entries) if base else {}
    shadowed = list(base.shadowed) if base else []
    for layer in layers:
        seen: dict[str, LayerEntry] = {}
        for entry in sorted(layer.entries, key=lambda e: e.path):
            name = entry.skill.name
            if name in seen:
                shadowed.append(Shadowing(name=name, winner=seen[name], loser=entry))
                continue
            seen[name] = entry
            if name in entries:
                shadowed.append(Shadowing(name=name, winner=entry, loser=entries[name]))
            entries[name] = entry
    return Merged(entries=entries, shadowed=tuple(shadowed))


def _ref(entry: LayerEntry) -> dict[str, str]:
    skill = entry.skill
    return {"layer": skill.layer.value, "source": skill.source, "location": skill.location, "skill_id": skill.skill_id}
