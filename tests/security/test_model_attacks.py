"""A hostile model against every tool it is offered, in every filesystem mode: traversal,
encodings, look-alikes, machine-owned state, other tenants' ids, odd argument types. Each call
must be refused with a clear error, leak nothing, and leave no trace outside alice's own area."""

from __future__ import annotations

from harness.events import ToolReturned

from .attacker import ALICE, Arena, arena, assert_refused, attacker, diff, sandbox_dir  # noqa: F401

# The sandbox's shell is attacked by the sandbox suite; here it only must not be a way around
# the file tools' view, which the snapshot checks.
SHELL = "execute_shell_command"


async def test_every_tool_refuses_hostile_paths_and_ids_without_a_trace(arena: Arena) -> None:
    model = attacker(skip=[SHELL])
    async with arena.harness(model) as agent:
        before = await arena.snapshot()
        result = await agent.run("do your worst", context=ALICE)
        after = await arena.snapshot()
    offered = set(model.calls[0].tool_names) - {SHELL}
    results = [e for e in result.events if isinstance(e, ToolReturned)]
    assert {r.name for r in results} == offered
    assert {"write_file", "read_file", "list_files", "propose_skill", "skill_manage", "request_promotion",
            "workflow_start", "workflow_continue", "workflow_status", "load_skill_through_path"} <= offered
    assert_refused(results)
    assert [key for key in diff(before, after) if not arena.own(key)] == []


async def test_every_tool_refuses_arguments_of_the_wrong_type(arena: Arena) -> None:
    model = attacker(odd_types=True, skip=[SHELL])
    async with arena.harness(model) as agent:
        before = await arena.snapshot()
        result = await agent.run("odd arguments", context=ALICE)
        after = await arena.snapshot()
    results = [e for e in result.events if isinstance(e, ToolReturned)]
    assert_refused(results)
    assert all("ToolArgumentError" in r.content for r in results)
    assert [key for key in diff(before, after) if not arena.own(key)] == []
