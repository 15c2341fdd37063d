"""Built-in tools the agent calls (M6), and Codemode.

The runtime needs only this surface::

    tools = BuiltinToolSource().tools_for(enabled, codemode=codemode)  # InvalidInput for an unknown name
    request_tools = tools.specs()          # what the model is offered; tools.names() are their names
    outcome = await tools.run(name, arguments, context, record_and_run)

where ``record_and_run(name, arguments)`` records an inner Codemode call as tool activity and returns
``await tools.run(name, arguments, context, record_and_run)``.
"""

from anyy.tools.base import Tool, ToolCallback, ToolContext, ToolOutcome
from anyy.tools.toolset import KNOWN_TOOL_NAMES, BuiltinToolSource, ToolSet, build_tools, check_tool_names

__all__ = [
    "KNOWN_TOOL_NAMES",
    "BuiltinToolSource",
    "Tool",
    "ToolCallback",
    "ToolContext",
    "ToolOutcome",
    "ToolSet",
    "build_tools",
    "check_tool_names",
]
