"""A failed turn leaves a durable notice on the session's path (U2): the error and whether sending again
may work, before the execution is marked failed; a turn that ends well leaves none."""

from __future__ import annotations

from pathlib import Path

from anyy.domain.entries import EntryKind, NoticeData
from anyy.providers.base import ProviderError
from anyy.runtime.deps import RuntimeSettings
from tests.runtime.harness import Harness


async def test_u2_a_failed_turn_is_recorded_as_a_notice_with_its_error_and_retryability(tmp_path: Path) -> None:
    async with Harness(tmp_path, settings=RuntimeSettings(retries_enabled=False)) as h:
        session = await h.session()
        h.model.enqueue(ProviderError("fatal", "the key was refused"))
        await h.send(session.id, "first")
        fatal = await h.state("failed")
        h.model.enqueue(ProviderError("transient", "overloaded"))
        await h.send(session.id, "second")
        transient = await h.state("failed")
        h.model.enqueue("fine now")
        await h.send(session.id, "third")
        await h.state("completed")
        path = await h.store(lambda s: s.path(session.id))
    notices = [e for e in path if e.kind == EntryKind.NOTICE]
    assert [n.text for n in notices] == [
        "The answer failed: the key was refused (fatal error from the model provider)",
        "The answer failed: overloaded (transient error from the model provider)",
    ]
    data = [n.payload() for n in notices]
    assert all(isinstance(d, NoticeData) and d.level == "error" for d in data)
    assert [(d.failed_execution, d.retryable) for d in data if isinstance(d, NoticeData)] == [
        (fatal.execution_id, False),
        (transient.execution_id, True),
    ]
    kinds = [e.kind.label for e in path]
    assert kinds == ["user", "notice", "user", "notice", "user", "assistant"]
