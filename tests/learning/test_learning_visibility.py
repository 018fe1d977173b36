"""Visibility filters on agent-created skills: environment, canary, allow-list, composite AND."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from typing import Any

import pytest

from harness.context import RuntimeContext
from harness.learning import (
    AllOf,
    AllowListFilter,
    CanaryFilter,
    EnvironmentFilter,
    SidecarUsage,
    SkillUsage,
    VisibilityPolicy,
    canary_bucket,
)
from harness.skills.skill import Layer, Skill
from tests.support.clock import ManualClock


def _skill(name: str, layer: Layer = Layer.USER) -> Skill:
    source = "workspace-namespaced" if layer is Layer.USER else "workspace"
    return Skill(
        name=name,
        description="d",
        raw=f"---\nname: {name}\ndescription: d\n---\nb\n".encode(),
        metadata={},
        disable_model_invocation=False,
        location=f"skills/{name}",
        folder=name,
        source=source,
        layer=layer,
    )


async def _mark_agent(usage: SidecarUsage, scope: str | None, skill: Skill, **fields: Any) -> None:
    record = SkillUsage(skill_id=skill.skill_id, name=skill.name, created_by="agent", **fields)
    await usage.for_scope(scope).update(skill.skill_id, lambda _: record)


async def test_environment_filter_applies_to_agent_skills_only(usage: SidecarUsage, alice: RuntimeContext) -> None:
    agent, human, shared_agent = _skill("agent-made"), _skill("by-hand"), _skill("team", Layer.WORKSPACE)
    await _mark_agent(usage, "alice", agent, environments=("prod",))
    await _mark_agent(usage, None, shared_agent, environments=("dev",))
    policy = VisibilityPolicy(EnvironmentFilter(), usage=usage)
    assert await policy.apply([agent, human, shared_agent], alice) == [human, shared_agent]
    prod = dataclasses.replace(alice, environment="prod")
    assert await policy.apply([agent, human, shared_agent], prod) == [agent, human]


async def test_human_skills_are_never_filtered(usage: SidecarUsage, alice: RuntimeContext) -> None:
    human = _skill("by-hand")
    await usage.for_scope("alice").record_view(human.skill_id, ManualClock().now)
    nobody = VisibilityPolicy(AllowListFilter([]), usage=usage)
    assert await nobody.apply([human], alice) == [human]


async def test_archived_agent_skills_are_hidden(usage: SidecarUsage, alice: RuntimeContext) -> None:
    skill = _skill("gone")
    await _mark_agent(usage, "alice", skill, state="archived")
    assert await VisibilityPolicy(AllOf([]), usage=usage).apply([skill], alice) == []


async def test_allow_list_and_composite_and(usage: SidecarUsage, alice: RuntimeContext) -> None:
    skill = _skill("beta")
    await _mark_agent(usage, "alice", skill, environments=("dev",))
    policy = VisibilityPolicy(AllOf([EnvironmentFilter(), AllowListFilter(["alice"])]), usage=usage)
    assert await policy.apply([skill], alice) == [skill]
    assert await policy.apply([skill], dataclasses.replace(alice, environment="prod")) == []
    assert await VisibilityPolicy(AllowListFilter(["bob"]), usage=usage).apply([skill], alice) == []


@pytest.mark.parametrize("percent", [10, 30, 75])
def test_canary_admits_about_p_percent_of_1000_users(percent: int) -> None:
    canary, skill = CanaryFilter(percent), _skill("rollout")
    usage = SkillUsage(skill_id=skill.skill_id, created_by="agent")
    admitted = sum(canary.admits(skill, usage, RuntimeContext(user_id=f"user-{i}")) for i in range(1000))
    assert abs(admitted - 10 * percent) <= 50


def test_canary_edges_admit_nobody_or_everybody() -> None:
    skill = _skill("rollout")
    usage = SkillUsage(skill_id=skill.skill_id, created_by="agent")
    users = [RuntimeContext(user_id=f"user-{i}") for i in range(200)]
    assert not any(CanaryFilter(0).admits(skill, usage, u) for u in users)
    assert all(CanaryFilter(100).admits(skill, usage, u) for u in users)
    with pytest.raises(ValueError):
        CanaryFilter(101)


def test_canary_buckets_are_stable_across_processes() -> None:
    here = [canary_bucket(f"user-{i}", "rollout") for i in range(1000)]
    code = (
        "from harness.learning import canary_bucket\n"
        "import json\n"
        "print(json.dumps([canary_bucket(f'user-{i}', 'rollout') for i in range(1000)]))"
    )
    other = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
        env={"PYTHONHASHSEED": "12345", "PATH": "/usr/bin:/bin"},
    )
    assert json.loads(other.stdout) == here
    assert here == [canary_bucket(f"user-{i}", "rollout") for i in range(1000)]
