"""``shell``: one bash command in the working directory, in the sandbox when there is one (SPEC N3)."""

from __future__ import annotations

from anyy.domain.model_io import ToolSpec
from anyy.tools.base import ToolContext, ToolOutcome
from anyy.tools.builtin import Arguments, BuiltinTool, object_schema
from anyy.tools.process import run_in_process_group


class ShellTool(BuiltinTool):
    spec = ToolSpec(
        name="shell",
        description=(
            "Run a bash command in the working directory and return its output (stdout and stderr "
            "interleaved) followed by its exit code. Nothing is read from stdin, so interactive programs "
            "must be given their input another way. A long output keeps its start and end, with a note of "
            "how much was cut from the middle: filter it (grep, head, tail) when you need a specific part. "
            "The command is killed, with everything it started, when the timeout passes; processes it "
            "leaves running in the background are stopped when it ends."
        ),
        parameters=object_schema(
            {
                "command": {"type": "string", "description": "The command line, run with `bash -c`."},
                "timeout": {
                    "type": "number",
                    "description": "Seconds before the command is killed; at most the session's limit, "
                    "which is also the default.",
                },
            },
            required=("command",),
        ),
    )

    async def execute(self, args: Arguments, context: ToolContext) -> ToolOutcome:
        command = args.string("command")
        # A longer timeout than the session allows is shortened rather than refused: the model rarely
        # knows the limit, and running with the allowed time is what it meant.
        timeout = min(args.optional_seconds("timeout", context.timeout), context.timeout)
        with context.policy.sandbox.confine(["bash", "-c", command], context.workdir) as confined:
            result = await run_in_process_group(
                confined.argv,
                cwd=context.workdir,
                timeout=timeout,
                output_cap=context.output_cap,
                pass_fds=confined.pass_fds,
                env=context.env,
                on_start=context.on_process,
                on_output=context.on_output,
            )
        text = result.output
        if text and not text.endswith("\n"):
            text += "\n"
        return ToolOutcome(text=confined.annotate(text + result.ending()), is_error=result.failed)
