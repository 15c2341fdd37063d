"""A tool call watched so that a crash loses neither it nor the programs it started (D3).

The call is recorded before it starts (a Codemode script's inner call: once it starts a program); the
process group its program runs in is recorded with the leader's start time as soon as it exists (so that
recovery can end it, and never a later process that got the same pid); what it prints is kept as it
comes, like a streamed answer (``StreamKeeper``); once it ends, its whole result replaces that. A write
that fails (a full disk) costs the record, never the call.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import functools
import logging
from typing import Any

from anyy.runtime.deps import Deps
from anyy.runtime.stream_keeper import StreamKeeper, output_saver
from anyy.storage.protocol import SessionStore
from anyy.tools.process import process_start_ticks

log = logging.getLogger("anyy.runtime")


class ToolWatch:
    def __init__(
        self, deps: Deps, execution_id: str, call_id: str, name: str, arguments: dict[str, Any], *, parent: str = ""
    ) -> None:
        """``parent``: the call is a Codemode script's, made from that ``run_script`` call; it is recorded
        only once it starts a program (a script may make thousands of calls that start none: recording
        each would cost two writes, several times the call itself), with that program's process group."""
        self._deps = deps
        self._lazy = bool(parent)
        self._recorded = False
        self._record = functools.partial(
            _record, execution_id=execution_id, call_id=call_id, name=name, arguments=arguments, parent=parent
        )
        self._execution_id = execution_id
        self._call_id = call_id
        self._output = StreamKeeper(deps, output_saver(execution_id, call_id))
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._writes: set[asyncio.Task[None]] = set()

    async def begin(self) -> None:
        """Record the call before it starts (a script's inner call: once it starts a program)."""
        if not self._lazy:
            await self._deps.owner.call(self._record)
            self._recorded = True

    def on_process(self, pid: int) -> None:
        started = process_start_ticks(pid)
        self._recorded = True
        task = asyncio.create_task(self._deps.owner.call(functools.partial(self._record, pid=pid, started=started)))
        self._writes.add(task)
        task.add_done_callback(self._writes.discard)

    def on_output(self, chunk: bytes) -> None:
        self._output.add(self._decoder.decode(chunk))

    async def end(self, result: str) -> None:
        """The call ended: its whole result replaces what it printed."""
        await self._output.close()
        for task in list(self._writes):
            with contextlib.suppress(Exception):
                await task
        if not self._recorded:
            return
        execution_id, call_id = self._execution_id, self._call_id
        try:
            await self._deps.owner.call(lambda s: s.save_tool_output(execution_id, call_id, result, result=True))
        except Exception as exc:
            log.warning("the result of tool call %s was not kept before its pass: %s", call_id, exc)


def _record(
    store: SessionStore,
    *,
    execution_id: str,
    call_id: str,
    name: str,
    arguments: dict[str, Any],
    pid: int | None = None,
    started: int | None = None,
    parent: str = "",
) -> None:
    store.record_tool_call(
        execution_id, call_id, name=name, arguments=arguments, pid=pid, started=started, parent=parent
    )
