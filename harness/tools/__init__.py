"""The tools a model is offered: function tools, skill tools, file tools and paging."""

from harness.tools.files import MACHINE_OWNED, MachineOwnedPath, ModelView, file_tools
from harness.tools.function import Tool, ToolArgumentError, ToolError, tool, tool_from_function
from harness.tools.paging import looks_binary, page_lines
from harness.tools.skills import MAX_LINES, MAX_PAGE_BYTES, UsageHooks, load_skill_file, skill_tools

__all__ = [
    "MACHINE_OWNED",
    "MAX_LINES",
    "MAX_PAGE_BYTES",
    "MachineOwnedPath",
    "ModelView",
    "Tool",
    "ToolArgumentError",
    "ToolError",
    "UsageHooks",
    "file_tools",
    "load_skill_file",
    "looks_binary",
    "page_lines",
    "skill_tools",
    "tool",
    "tool_from_function",
]
