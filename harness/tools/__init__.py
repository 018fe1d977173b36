"""The tools a model is offered: function tools, skill tools, skill search, file tools and paging."""

from harness.tools.context import ToolContext, calling, current_tool_context, keeping_context
from harness.tools.files import MACHINE_OWNED, MachineOwnedPath, ModelView, file_tools
from harness.tools.function import Tool, ToolArgumentError, ToolError, tool, tool_from_function
from harness.tools.paging import looks_binary, page_lines
from harness.tools.search import MAX_RESULTS, SkillMatch, search_plan, search_tools
from harness.tools.skill_text import render_skill_text
from harness.tools.skills import MAX_LINES, MAX_PAGE_BYTES, UsageHooks, load_skill_file, render_skill_file, skill_tools

__all__ = [
    "MACHINE_OWNED",
    "MAX_LINES",
    "MAX_PAGE_BYTES",
    "MAX_RESULTS",
    "MachineOwnedPath",
    "ModelView",
    "SkillMatch",
    "Tool",
    "ToolArgumentError",
    "ToolContext",
    "ToolError",
    "UsageHooks",
    "calling",
    "current_tool_context",
    "file_tools",
    "keeping_context",
    "load_skill_file",
    "looks_binary",
    "page_lines",
    "render_skill_file",
    "render_skill_text",
    "search_plan",
    "search_tools",
    "skill_tools",
    "tool",
    "tool_from_function",
]
