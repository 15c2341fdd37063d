"""L2, L3: what every backend keeps of a channel: pairing codes (one per sender, a few per channel,
used once), send rights on one session (not a fork's, removed with the session), handled inbound
messages with the read position, and replies recorded once, then delivered."""

from __future__ import annotations

import pytest

from anyy.domain.channels import MAX_PENDING_CODES, Inbound, Reply
from anyy.domain.errors import NotFound
from anyy.domain.sessions import NewSession
from anyy.storage.protocol import SessionStore
from tests.conformance.conftest import Reopen


def _inbound(key: str, session_id: str, submission_id: str | None = "sub_1") -> Inbound:
    return Inbound(
        channel="tg", key=key, conversation="42", sender="7", session_id=session_id, submission_id=submission_id
    )


def _reply(key: str, text: str = "hi") -> Reply:
    return Reply(channel="tg", key=key, conversation="42", text=text)


def test_l2_pairing_codes_one_per_sender_a_few_per_channel_used_once(store: SessionStore, reopen: Reopen) -> None:
    session = store.create_session(NewSession())
    first = store.channel_code("tg", "7", "42", "@ann", 3600)
    assert first is not None
    assert len(first) == 8
    assert store.channel_code("tg", "7", "42", "@ann", 3600) == first  # the same while it waits
    others = [store.channel_code("tg", str(n), str(n), "", 3600) for n in range(8, 8 + MAX_PENDING_CODES)]
    assert others[: MAX_PENDING_CODES - 1] == [c for c in others[: MAX_PENDING_CODES - 1] if c]
    assert others[-1] is None  # too many waiting: refused without a code
    store = reopen(store)
    pairing = store.pair_with_code(first.lower(), session.id, ["talk"])
    assert (pairing.sender, pairing.conversation, pairing.owner, pairing.rights) == ("7", "42", True, ["talk"])
    with pytest.raises(NotFound):
        store.pair_with_code(first, session.id, ["talk"])  # used up
    second = store.pair_with_code(others[0] or "", session.id, ["talk", "stop"])
    assert not second.owner  # the first sender approved is the owner
    assert store.get_pairing("tg", "7", session.id) == pairing


def test_l2_expired_codes_are_refused(store: SessionStore) -> None:
    session = store.create_session(NewSession())
    code = store.channel_code("tg", "7", "42", "", -1.0)  # expired at once
    assert code is not None
    assert store.list_channel_codes() == []
    with pytest.raises(NotFound):
        store.pair_with_code(code, session.id, ["talk"])


def test_l2_send_rights_belong_to_the_session_not_to_a_fork_and_go_with_a_delete(store: SessionStore) -> None:
    session = store.create_session(NewSession())
    store.pair_with_code(store.channel_code("tg", "7", "42", "", 3600) or "", session.id, ["talk"])
    fork = store.fork_session(session.id)
    assert store.get_pairing("tg", "7", fork.id) is None
    assert [p.session_id for p in store.list_pairings("tg")] == [session.id]
    store.delete_session(session.id)
    assert store.list_pairings() == []
    assert store.get_pairing("tg", "7", session.id) is None


def test_l3_inbound_recorded_once_with_the_read_position(store: SessionStore, reopen: Reopen) -> None:
    session = store.create_session(NewSession())
    assert store.channel_position("tg") == ""
    assert store.record_inbound(_inbound("100", session.id), "100", []) is True
    store = reopen(store)
    assert store.channel_position("tg") == "100"
    assert store.record_inbound(_inbound("100", session.id, "sub_other"), "101", []) is False  # seen: position only
    assert store.channel_position("tg") == "101"
    found = store.get_inbound("tg", "100")
    assert found is not None
    assert found.submission_id == "sub_1"
    assert [i.key for i in store.unanswered_inbound("tg")] == ["100"]
    store.record_inbound(_inbound("102", session.id, None), "102", [_reply("102#0000", "your code")])
    assert [i.key for i in store.unanswered_inbound("tg")] == ["100"]  # a refusal is answered at once
    store.queue_replies([_reply("100#0001", "one"), _reply("100#0002", "two")], answers="100")
    store.queue_replies([_reply("100#0001", "again")], answers="100")  # an answer is recorded once
    assert store.unanswered_inbound("tg") == []
    pending = store.pending_replies("tg")
    assert [(r.key, r.text) for r in pending] == [("102#0000", "your code"), ("100#0001", "one"), ("100#0002", "two")]


def test_l3_replies_are_delivered_once_and_failures_kept_for_a_retry(store: SessionStore, reopen: Reopen) -> None:
    store.queue_replies([_reply("1#0001"), _reply("1#0002")])
    store.reply_failed("tg", "1#0001", "the platform is down", 50.0)
    store = reopen(store)
    waiting = store.pending_replies("tg")
    first = waiting[0]
    assert (first.key, first.attempts, first.error, first.next_at) == ("1#0001", 1, "the platform is down", 50.0)
    store.reply_sent("tg", "1#0001", "m1")
    assert [r.key for r in store.pending_replies("tg")] == ["1#0002"]
    sent = store.list_replies("tg")
    assert [(r.key, r.platform_id, r.delivered_at is not None) for r in sent] == [
        ("1#0001", "m1", True),
        ("1#0002", "", False),
    ]
    with pytest.raises(NotFound):
        store.reply_sent("tg", "nope", "")
    store.forget_channel("tg")
    assert store.list_replies("tg") == []
    assert store.pending_replies("tg") == []
