"""Use the harness's skills from other agent frameworks.

One module per framework, each behind its own extra and importing its framework only when
imported itself (``import harness`` pulls in none of them):

- :mod:`harness.adapters.openai_agents` (``pip install 'agent-skill-harness[openai-agents]'``):
  :class:`OpenAIAgentsSkills` gives an OpenAI Agents SDK ``Agent`` dynamic instructions and the
  skill tools, resolved per run from the run's context;
- :mod:`harness.adapters.pydantic_ai` (``[pydantic-ai]``): :class:`SkillsToolset`, a
  pydantic-ai toolset whose instructions and tools are resolved per run from ``deps``;
- :mod:`harness.adapters.deepagents` (``[deepagents]``): :class:`SkillsBackend`, a read-only
  deepagents backend serving one user's merged skills to ``SkillsMiddleware``.

They share :class:`SkillBridge` (one user's plan, catalog and tools per run) and
:func:`runtime_context_of` (the user a framework's run context names). The framework classes
are importable from here too; naming one imports its framework.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from harness.adapters.bridge import SkillBridge, SkillTurn, runtime_context_of
from harness.adapters.errors import AdapterError, UserContextError

if TYPE_CHECKING:
    from harness.adapters.deepagents import SkillsBackend
    from harness.adapters.openai_agents import OpenAIAgentsSkills
    from harness.adapters.pydantic_ai import SkillsToolset

__all__ = [
    "AdapterError",
    "OpenAIAgentsSkills",
    "SkillBridge",
    "SkillTurn",
    "SkillsBackend",
    "SkillsToolset",
    "UserContextError",
    "runtime_context_of",
]

# The framework-bound names, imported on first use so the framework stays optional.
_LAZY = {
    "OpenAIAgentsSkills": "harness.adapters.openai_agents",
    "SkillsToolset": "harness.adapters.pydantic_ai",
    "SkillsBackend": "harness.adapters.deepagents",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'harness.adapters' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
