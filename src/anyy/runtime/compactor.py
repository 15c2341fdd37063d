"""Compaction and branch summaries (R4, R5): a model call whose answer is applied only when it is sound.

A summary is applied only when the model finished normally and returned text; an error, a stop or a
truncated answer changes nothing and the user is told (a notice event and a notice entry). Applying is
one append (a compaction entry in the same session), so history is never deleted or moved elsewhere.
An operation keeps the budget it started with; a later one reads the settings again.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from anyy.api.events import Notice
from anyy.domain.compaction import (
    BRANCH_SUMMARY_INSTRUCTIONS,
    SUMMARY_INSTRUCTIONS,
    choose_cut,
    render_transcript,
    summary_is_usable,
)
from anyy.domain.context import ContextItem, ModelContext
from anyy.domain.entries import CompactionData, EntryKind, NewEntry, NoticeData
from anyy.domain.model_io import ModelRequest, StopEvent, StopReason, TextDelta, UserMessage
from anyy.domain.sessions import Session
from anyy.providers.base import ProviderError
from anyy.runtime.announce import Announcer
from anyy.runtime.deps import Deps

T = TypeVar("T")
Guard = Callable[[Awaitable[Any]], Awaitable[Any]]

SUMMARY_MAX_TOKENS = 4096


async def _unguarded(awaitable: Awaitable[T]) -> T:
    return await awaitable


class Compactor:
    def __init__(self, deps: Deps) -> None:
        self.deps = deps

    async def compact(self, session_id: str, *, reason: str, guard: Guard = _unguarded) -> bool:
        """Summarise the older part of the context; True when a compaction entry was applied.

        ``guard`` wraps the model call so that the caller's stop can cancel it (nothing is applied then)."""
        owner = self.deps.owner
        budget = self.deps.settings.budget_tokens  # kept for the whole operation (R4)
        context: ModelContext = await owner.call(lambda s: self.deps.contexts.context(s, session_id))
        cut = choose_cut(context.items, int(budget * self.deps.settings.keep_fraction))
        if cut is None:
            await self._tell(session_id, "Compaction skipped: there is no earlier turn to summarise yet.")
            return False
        transcript = render_transcript(context.items[:cut], context.summary)
        text, stop, error = await self._summarise(session_id, SUMMARY_INSTRUCTIONS, transcript, context, guard)
        why = error or summary_is_usable(text, stop)
        if why is not None:
            await self._tell(session_id, f"Compaction not applied ({reason}): {why}. The context was kept as it was.")
            return False
        first_kept = context.items[cut][0]
        entry = NewEntry(
            kind=EntryKind.COMPACTION,
            text=text.strip(),
            data=CompactionData(first_kept=first_kept, tokens_before=context.tokens),
        )
        appended = await owner.call(lambda s: s.append_entries(session_id, [entry]))
        Announcer(self.deps).entries(session_id, appended)
        return True

    async def branch_summary(
        self, session_id: str, branch: list[ContextItem], *, guard: Guard = _unguarded
    ) -> tuple[str | None, str | None]:
        """A summary of the branch being left: ``(text, None)``, or ``(None, why it was not made)``."""
        if not branch:
            return None, "the branch being left has nothing to summarise"
        context: ModelContext = await self.deps.owner.call(lambda s: s.context(session_id))
        text, stop, error = await self._summarise(
            session_id, BRANCH_SUMMARY_INSTRUCTIONS, render_transcript(branch), context, guard
        )
        why = error or summary_is_usable(text, stop)
        return (None, why) if why is not None else (text.strip(), None)

    async def _summarise(
        self, session_id: str, instructions: str, transcript: str, context: ModelContext, guard: Guard
    ) -> tuple[str, StopReason | None, str | None]:
        session: Session = await self.deps.owner.call(lambda s: s.get_session(session_id))
        provider_name, model = self.deps.models.resolve(session.provider, session.model, context.last_model)
        request = ModelRequest(
            model=model,
            system=instructions,
            messages=(UserMessage(text=transcript),),
            effort="",
            max_tokens=SUMMARY_MAX_TOKENS,
        )
        parts: list[str] = []
        stop: list[StopReason] = []

        async def collect() -> None:
            async for event in (await self.deps.models.provider(provider_name)).stream(request):
                if isinstance(event, TextDelta):
                    parts.append(event.text)
                elif isinstance(event, StopEvent):
                    stop.append(event.reason)

        try:
            await guard(collect())
        except ProviderError as exc:
            return "", None, f"the model failed ({exc.message})"
        return "".join(parts), (stop[-1] if stop else None), None

    async def _tell(self, session_id: str, text: str) -> None:
        announce = Announcer(self.deps)
        announce.event(Notice(session_id=session_id, level="warning", text=text))
        entry = NewEntry(kind=EntryKind.NOTICE, text=text, data=NoticeData(level="warning"))
        announce.entries(session_id, await self.deps.owner.call(lambda s: s.append_entries(session_id, [entry])))
