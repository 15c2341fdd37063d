"""``ask_user``: a clarifying question that suspends the execution until the user answers."""

from __future__ import annotations

from anyy.domain.model_io import ToolSpec
from anyy.tools.base import ToolContext, ToolOutcome
from anyy.tools.builtin import Arguments, BuiltinTool, object_schema


class AskUserTool(BuiltinTool):
    spec = ToolSpec(
        name="ask_user",
        description=(
            "Ask the user a question when you cannot go on without their decision or information. Your work "
            "pauses until they answer; the answer comes back as this tool's result. Ask one clear question "
            "with the options you see; do not use it for progress reports."
        ),
        parameters=object_schema(
            {"question": {"type": "string", "description": "The question, as the user will read it."}},
            required=("question",),
        ),
    )

    async def execute(self, args: Arguments, context: ToolContext) -> ToolOutcome:
        question = args.string("question").strip()
        if not question:
            return ToolOutcome(text="ask_user: 'question' is blank: write the question to ask", is_error=True)
        # The runtime records the question as a clarification and suspends; the answer replaces this text.
        return ToolOutcome(text=question, suspend=question)
