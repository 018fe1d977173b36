"""The model of a turn: the agent's own, or the one an invoked skill's ``model:`` field names.

A skill's fields choose a provider, or narrow the turn's tools, only when the agent trusts the
skill (:func:`trusted`): every skill but a market one, which needs its market listed in
:attr:`TrustOptions.trusted_markets <harness.agent.options.TrustOptions.trusted_markets>`. A
skill that needs an activation approval also narrows the turn's tools for a user who approved
it at its current content (see :func:`harness.agent.toolset.skill_offer`).
"""

from __future__ import annotations

import logging
from collections.abc import Collection
from contextlib import AsyncExitStack

from harness.agent.options import TrustOptions
from harness.events import SkillWarning
from harness.models import Model, ModelError, open_model
from harness.pipeline.plan import ResolvedSkill
from harness.skills.arguments import text_field
from harness.skills.skill import Layer
from repositories import exact_sub_source

__all__ = ["ModelChoice", "trusted"]

log = logging.getLogger(__name__)


def trusted(resolved: ResolvedSkill, trusted_markets: Collection[str]) -> bool:
    """Whether a skill's fields may choose a provider or narrow tools: every skill but a market
    one, which needs its market's slug (or, for a plugin's skill, its plugin's exact slug,
    never one its name only folds to) listed."""
    if resolved.skill.layer is not Layer.MARKET:
        return True
    market, plugin = resolved.source.source, resolved.entry.plugin
    return market in trusted_markets or (plugin != "" and exact_sub_source(market, plugin) in trusted_markets)


class ModelChoice:
    """Picks a turn's model. Models a skill names by an ``open_model`` spec are opened once and
    kept on ``stack`` (the owning agent's) until the agent closes; subagents share the choice."""

    def __init__(self, default: Model, trust: TrustOptions, stack: AsyncExitStack) -> None:
        self.default = default
        self.trust = trust
        self._opened: dict[str, Model] = dict(trust.models)
        self._stack = stack

    def with_default(self, default: Model) -> ModelChoice:
        """The same choice (and opened models) with another default (a subagent's model)."""
        child = ModelChoice(default, self.trust, self._stack)
        child._opened = self._opened
        return child

    async def for_skill(self, resolved: ResolvedSkill | None) -> tuple[Model, SkillWarning | None]:
        """The model the invoked skill's ``model:`` names, or the default and a warning when the
        name is not trusted or not available (``None``: no skill, the default)."""
        if resolved is None:
            return self.default, None
        skill = resolved.skill
        spec = text_field(skill.metadata, "model")
        if not spec or spec == "inherit":
            return self.default, None
        if spec not in self._opened and not trusted(resolved, self.trust.trusted_markets):
            return self.default, self._warn(resolved, "untrusted-model", self._untrusted(resolved, spec))
        if spec not in self._opened:
            try:
                model = open_model(spec)
            except ModelError as exc:
                message = f"model {spec!r} is not available ({exc}); using {self.default.name!r}"
                return self.default, self._warn(resolved, "unknown-model", message)
            self._opened[spec] = await self._stack.enter_async_context(model)
        return self._opened[spec], None

    def _untrusted(self, resolved: ResolvedSkill, spec: str) -> str:
        # A market is not trusted to send the conversation to a provider the app did not pick.
        skill = resolved.skill
        folded = (
            f" (its plugin {resolved.entry.plugin!r} only folds to that slug; trust matches exact slugs)"
            if skill.source in self.trust.trusted_markets
            else ""
        )
        return (
            f"model {spec!r} ignored: market {skill.source!r} is not in trusted_markets"
            f"{folded} and the model is not one of the agent's models; using {self.default.name!r}"
        )

    @staticmethod
    def _warn(resolved: ResolvedSkill, code: str, detail: str) -> SkillWarning:
        message = f"skill {resolved.skill.name!r}: {detail}"
        log.warning("%s", message)
        return SkillWarning(skill_id=resolved.skill.skill_id, code=code, message=message)
