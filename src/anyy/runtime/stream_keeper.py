"""Streamed text (a model's answer and its thinking, D4; a tool's output, D3) kept durably as it comes,
at a bounded cost.

The stream never waits for the store: a delta is added to a buffer, and a write of what gathered is
started when ``SAVE_BYTES`` are waiting or ``SAVE_EVERY`` seconds after the first unsaved delta,
whichever comes first. One write at a time; what arrives meanwhile is coalesced into the next one. Each
write appends only the new text (``save``), so a long answer costs its length once, not its
length times the number of saves. A model's thinking is gathered beside its answer (``add_thinking``)
and goes in the same writes, so keeping it costs no write of its own. A failed write (a full disk) stops
the keeping for this pass, never the stream.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import Callable

from anyy.runtime.deps import Deps
from anyy.storage.protocol import SessionStore

SAVE_EVERY = 1.0  # seconds
SAVE_BYTES = 4096  # characters, near enough

log = logging.getLogger("anyy.runtime")
# Writes one piece: ``save(store, text=…, thinking=…, first=…)``; ``first`` for the first piece this keeper
# writes; ``thinking`` only for a keeper fed with some.
Save = Callable[..., None]


def answer_saver(execution_id: str, provider: str, model: str) -> Save:
    def save(store: SessionStore, *, text: str, thinking: str, first: bool) -> None:
        store.save_stream_text(execution_id, text, provider=provider, model=model, first=first, thinking=thinking)

    return save


def output_saver(execution_id: str, call_id: str) -> Save:
    def save(store: SessionStore, *, text: str, thinking: str, first: bool) -> None:
        store.save_tool_output(execution_id, call_id, text)

    return save


class StreamKeeper:
    def __init__(self, deps: Deps, save: Save, *, every: float | None = None, size: int | None = None) -> None:
        self._deps = deps
        self._save = save
        self._every = SAVE_EVERY if every is None else every  # read here, not at import: tests may set them
        self._size = SAVE_BYTES if size is None else size
        self._unsaved: list[str] = []
        self._unsaved_thinking: list[str] = []
        self._unsaved_chars = 0
        self._first = True  # the first write replaces what an earlier attempt of this pass kept
        self._timer: asyncio.TimerHandle | None = None
        self._writing: asyncio.Task[None] | None = None
        self._again = False
        self._broken = False
        self.saves = 0  # writes made (for benchmarks)

    def add(self, text: str) -> None:
        self._add(self._unsaved, text)

    def add_thinking(self, text: str) -> None:
        """The model's thinking, kept as such beside its answer, in the same writes."""
        self._add(self._unsaved_thinking, text)

    def _add(self, unsaved: list[str], text: str) -> None:
        if self._broken or not text:
            return
        unsaved.append(text)
        self._unsaved_chars += len(text)
        if self._unsaved_chars >= self._size:
            self._kick()
        elif self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(self._every, self._kick)

    def _kick(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._writing is not None and not self._writing.done():
            self._again = True  # the write in flight takes what gathered once it is done
            return
        self._writing = asyncio.create_task(self._write())

    async def _write(self) -> None:
        while self._unsaved_chars and not self._broken:
            self._again = False
            text, thinking = "".join(self._unsaved), "".join(self._unsaved_thinking)
            self._unsaved.clear()
            self._unsaved_thinking.clear()
            self._unsaved_chars = 0
            first, self._first = self._first, False
            save = functools.partial(self._save, text=text, thinking=thinking, first=first)
            try:
                await self._deps.owner.call(save)
            except Exception as exc:
                log.warning("streamed text not kept: %s", exc)
                self._broken = True
                return
            self.saves += 1
            if not self._again:
                break
        if self._unsaved_chars and self._timer is None and not self._broken:
            self._timer = asyncio.get_running_loop().call_later(self._every, self._kick)

    async def close(self, *, save_rest: bool = False) -> None:
        """Stop keeping: wait for the write in flight (so none lands after the pass is recorded); with
        ``save_rest``, also write what is still unsaved (the pass goes on with tool calls)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if not save_rest:
            self._unsaved.clear()
            self._unsaved_thinking.clear()
            self._unsaved_chars = 0
        writing = self._writing
        if writing is not None:
            with contextlib.suppress(Exception):
                await asyncio.shield(writing)
        if save_rest and self._unsaved_chars:
            await self._write()
        self._broken = True
