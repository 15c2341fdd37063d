"""Child process of the crash test (test_crash.py): works on a store until it is killed.

Usage: ``python crash_child.py BACKEND DIRECTORY SESSION_ID RUN``. It first recovers what a previous kill
interrupted, then loops: accept a submission and acknowledge it (``S <id>``), answer it with one pass of
three entries and acknowledge the pass (``P <marker>``), finish the execution. A line is printed only
after the store returned, that is after the commit: whatever was acknowledged must survive the kill.
"""

from __future__ import annotations

import sys
from pathlib import Path

from anyy.domain.entries import AssistantData, EntryKind, NewEntry, ToolCallData, ToolResultData
from anyy.domain.queue import NewSubmission
from tests.conformance.backends import open_backend


def pass_entries(marker: str) -> list[NewEntry]:
    return [
        NewEntry(kind=EntryKind.ASSISTANT, text=f"{marker} thinking", data=AssistantData(model="crash")),
        NewEntry(
            kind=EntryKind.TOOL_CALL,
            text=f"{marker} call",
            data=ToolCallData(call_id=marker, name="shell", arguments={"cmd": marker}),
        ),
        NewEntry(kind=EntryKind.TOOL_RESULT, text=f"{marker} result", data=ToolResultData(call_id=marker)),
    ]


def main(argv: list[str]) -> None:
    backend, directory, session_id, run = argv[1], Path(argv[2]), argv[3], argv[4]
    store = open_backend(backend, directory)
    store.recover_interrupted("The gateway was killed; the response it was writing was interrupted.")
    out = sys.stdout
    number = 0
    while True:
        number += 1
        sub = store.add_submission(session_id, NewSubmission(text=f"prompt {run}-{number}"))
        out.write(f"S {sub.id}\n")
        out.flush()
        execution = store.start_execution(session_id, [sub.id])
        marker = f"pass-{run}-{number}"
        store.record_pass(execution.id, pass_entries(marker))
        out.write(f"P {marker}\n")
        out.flush()
        store.set_execution_state(execution.id, "completed")


if __name__ == "__main__":
    main(sys.argv)
