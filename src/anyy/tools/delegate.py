"""``delegate``: hand tasks to child Background sessions and get each one's final answer (SPEC K2).

The call starts the children and returns at once with ``waits``: the runtime suspends the execution,
and the call's result (every child's answer or failure, in order) arrives when the last child ends,
even across a Gateway restart. How many children run at once and how deep delegation goes are the
profile's ``[background]`` limits, applied by the runtime.
"""

from __future__ import annotations

from typing import Any

from anyy.domain.delegation import TaskRequest
from anyy.domain.errors import AnyyError
from anyy.domain.model_io import ToolSpec
from anyy.tools.base import ToolContext, ToolOutcome
from anyy.tools.builtin import Arguments, BuiltinTool, ToolFailure, object_schema

MAX_TASKS = 20  # in one call; more waits for slots, but a call of hundreds is a runaway loop

_TASK_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "brief": {"type": "string", "description": "Everything the helper needs: it sees nothing else."},
        "role": {"type": "string", "description": "A role of the profile for the helper (default: yours)."},
        "model": {"type": "string", "description": "'provider/model' for the helper (default: yours)."},
        "tools": {
            "type": "array",
            "items": {"type": "string"},
            "description": "The helper's tools (default: yours, without ask_user).",
        },
        "folder": {
            "type": "string",
            "description": "The folder the helper works in: a subfolder of your workspace (default: yours).",
        },
    },
    "required": ["brief"],
    "additionalProperties": False,
}


class DelegateTool(BuiltinTool):
    spec = ToolSpec(
        name="delegate",
        description=(
            "Hand one or more self-contained tasks to helper sessions that work on them in the background, "
            "several at once. Each helper starts from its brief alone (write everything it needs) and "
            "your call returns every helper's final answer, in order, once all have finished. Use it for "
            "independent pieces of work (research, checks) that would clutter this conversation."
        ),
        parameters=object_schema(
            {"tasks": {"type": "array", "items": _TASK_SCHEMA, "minItems": 1, "maxItems": MAX_TASKS}},
            required=("tasks",),
        ),
    )

    async def execute(self, args: Arguments, context: ToolContext) -> ToolOutcome:
        tasks = parse_tasks(args.value("tasks"))
        if context.delegate is None:
            raise ToolFailure("delegate: delegation is not available here (no Gateway runtime runs this call)")
        try:
            note = await context.delegate(tasks)
        except AnyyError as error:
            raise ToolFailure(f"delegate: {error}") from None
        return ToolOutcome(text=note, waits=True)


def parse_tasks(raw: Any) -> list[TaskRequest]:
    """The tasks of a call, checked; :class:`ToolFailure` names what is wrong."""
    if not isinstance(raw, list) or not raw:
        raise ToolFailure("delegate: 'tasks' must be a non-empty list of {brief, role?, model?, tools?, folder?}")
    if len(raw) > MAX_TASKS:
        raise ToolFailure(f"delegate: at most {MAX_TASKS} tasks in one call, not {len(raw)}: group them")
    return [_task(index, item) for index, item in enumerate(raw, start=1)]


def _task(index: int, item: Any) -> TaskRequest:
    where = f"delegate: task {index}"
    if isinstance(item, str):
        item = {"brief": item}
    if not isinstance(item, dict):
        raise ToolFailure(f"{where} must be an object with a 'brief', not {type(item).__name__}")
    unknown = sorted(set(item) - {"brief", "role", "model", "tools", "folder"})
    if unknown:
        raise ToolFailure(
            f"{where} has unknown key(s) {', '.join(unknown)}; it takes brief, role, model, tools, folder"
        )
    brief = item.get("brief")
    if not isinstance(brief, str) or not brief.strip():
        raise ToolFailure(f"{where} needs a 'brief': the text the helper starts from")
    for key in ("role", "model", "folder"):
        if not isinstance(item.get(key, ""), str):
            raise ToolFailure(f"{where}: {key!r} must be a string")
    tools = item.get("tools")
    if tools is not None and (not isinstance(tools, list) or not all(isinstance(t, str) for t in tools)):
        raise ToolFailure(f"{where}: 'tools' must be a list of tool names")
    return TaskRequest(
        brief=brief.strip(),
        role=item.get("role", ""),
        model=item.get("model", ""),
        tools=None if tools is None else tuple(tools),
        folder=item.get("folder", ""),
    )
