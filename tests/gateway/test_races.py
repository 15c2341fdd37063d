"""Races between clients on real WebSocket connections: two clients (two threads, two connections) fire at
the same instant, released together by a barrier, many times over. Whatever the interleaving, exactly one
side wins and the loser gets a conflict (Q3); a stop never reaches an execution it did not capture (S6)."""

from __future__ import annotations

import os
import threading
from collections import Counter
from collections.abc import Callable
from functools import partial
from typing import Any

from anyy.domain.model_io import TextDelta
from anyy.providers.gates import Gate
from commons import jsonrpc
from commons.jsonrpc import RpcError
from tests.gateway.live import TIMEOUT, LiveGateway, WsClient, busy_session, is_state, wait_gate

ROUNDS = int(os.environ.get("ANYY_RACE_ROUNDS", "25"))


def together(*actions: Callable[[], Any]) -> list[Any]:
    """Run the actions on threads released at the same instant; each one's result or RpcError."""
    barrier = threading.Barrier(len(actions))
    results: list[Any] = [None] * len(actions)

    def run(i: int, action: Callable[[], Any]) -> None:
        barrier.wait(TIMEOUT)
        try:
            results[i] = action()
        except RpcError as exc:
            results[i] = exc
        except BaseException as exc:  # surfaced below, in the test's thread
            results[i] = exc

    threads = [threading.Thread(target=run, args=(i, a)) for i, a in enumerate(actions)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(TIMEOUT)
        assert not thread.is_alive(), "a racing call never returned"
    for result in results:
        if isinstance(result, BaseException) and not isinstance(result, RpcError):
            raise result
    return results


def has_ended(execution_id: str, event: dict[str, Any]) -> bool:
    return (
        event.get("type") == "execution_state"
        and event["execution_id"] == execution_id
        and event["state"] in ("completed", "interrupted")
    )


def user_texts(client: WsClient, session_id: str) -> list[str]:
    history = client.call("session.history", {"session_id": session_id, "limit": 200})["items"]
    return [e["text"] for e in reversed(history) if e["kind"] == "user"]


def test_q3_an_edit_racing_the_take_of_the_same_item_either_wins_whole_or_gets_a_conflict(
    gateway: LiveGateway,
) -> None:
    outcomes: Counter[str] = Counter()
    with gateway.ws() as a, gateway.ws() as b:
        for round in range(ROUNDS):
            busy = busy_session(gateway, a)
            steering = a.call("session.send", {"session_id": busy.id, "text": f"orig {round}", "kind": "steering"})
            gateway.model.enqueue("ack")
            _, edit = together(
                busy.gate.open,
                partial(b.call, "session.queue.update", {"submission_id": steering["id"], "text": f"edited {round}"}),
            )
            a.event(is_state("completed", busy.execution_id))
            taken = a.call("session.wait", {"submission_id": steering["id"], "timeout": 0})
            assert taken["state"] == "completed"
            if isinstance(edit, RpcError):
                assert edit.code == jsonrpc.CONFLICT, edit
                outcomes["take won"] += 1
                expected = f"orig {round}"
            else:
                assert edit["text"] == f"edited {round}"
                outcomes["edit won"] += 1
                expected = f"edited {round}"
            # What the model read is exactly what the winner left: never a mix, never both.
            assert taken["text"] == expected
            assert user_texts(a, busy.id) == ["start", expected]
            assert gateway.model.requests[-1].messages[-1].text == expected
    assert sum(outcomes.values()) == ROUNDS


def test_q3_two_clients_acting_on_the_same_pending_item_exactly_one_wins(gateway: LiveGateway) -> None:
    outcomes: Counter[str] = Counter()
    with gateway.ws() as a, gateway.ws() as b:
        busy = busy_session(gateway, a)
        for round in range(ROUNDS * 2):
            item = a.call("session.send", {"session_id": busy.id, "text": f"item {round}", "kind": "follow_up"})
            ref = {"submission_id": item["id"], "version": item["version"]}
            second: tuple[str, dict[str, Any]] = (
                ("session.queue.cancel", {}) if round % 2 else ("session.queue.steer", {})
            )
            update, other = together(
                partial(a.call, "session.queue.update", {**ref, "text": f"edited {round}"}),
                partial(b.call, second[0], {**ref, **second[1]}),
            )
            winners = [r for r in (update, other) if not isinstance(r, RpcError)]
            losers = [r for r in (update, other) if isinstance(r, RpcError)]
            assert len(winners) == 1, (update, other)
            assert losers[0].code == jsonrpc.CONFLICT
            now = a.call("session.wait", {"submission_id": item["id"], "timeout": 0})
            assert now["version"] == item["version"] + 1
            if winners[0] is update:
                outcomes["update"] += 1
                assert (now["state"], now["text"], now["kind"]) == ("pending", f"edited {round}", "follow_up")
            elif second[0] == "session.queue.cancel":
                outcomes["cancel"] += 1
                assert (now["state"], now["text"]) == ("cancelled", f"item {round}")
            else:
                outcomes["steer"] += 1
                assert (now["state"], now["text"], now["kind"]) == ("pending", f"item {round}", "steering")
            a.call("session.queue.clear", {"session_id": busy.id})
        busy.gate.open()
        a.event(is_state("completed", busy.execution_id))
    assert sum(outcomes.values()) == ROUNDS * 2


def test_s6_two_stops_then_a_late_stop_never_hit_a_later_execution(gateway: LiveGateway) -> None:
    with gateway.ws() as a, gateway.ws() as b:
        busy = busy_session(gateway, a)
        follow = a.call("session.send", {"session_id": busy.id, "text": "next", "kind": "follow_up"})
        stop = {"session_id": busy.id, "execution_id": busy.execution_id}
        first, second = together(lambda: a.call("session.stop", stop), lambda: b.call("session.stop", stop))
        assert first["stopped"] or second["stopped"]
        a.event(is_state("interrupted", busy.execution_id))
        # The stop kept the queue and started nothing (S7).
        assert [x["id"] for x in a.call("session.queue.list", {"session_id": busy.id})] == [follow["id"]]
        assert a.call("session.get", {"session_id": busy.id})["running_execution"] is None
        gate = Gate("second response")
        gateway.model.enqueue([gate, TextDelta(text="second answer")])
        a.call("session.continue", {"session_id": busy.id})
        wait_gate(gate)
        later = a.call("session.get", {"session_id": busy.id})["running_execution"]
        assert later is not None
        assert later != busy.execution_id
        # Late stops of the first execution, from both clients, do nothing to the running one.
        late = together(lambda: a.call("session.stop", stop), lambda: b.call("session.stop", stop))
        assert [r["stopped"] for r in late] == [False, False]
        assert a.call("session.get", {"session_id": busy.id})["running_execution"] == later
        gate.open()
        a.event(is_state("completed", later))
        assert a.call("session.wait", {"submission_id": follow["id"], "timeout": 0})["state"] == "completed"


def test_s6_a_stop_racing_the_end_of_its_execution_never_reaches_the_next_one(gateway: LiveGateway) -> None:
    outcomes: Counter[str] = Counter()
    with gateway.ws() as a, gateway.ws() as b:
        for _ in range(ROUNDS):
            busy = busy_session(gateway, a)
            follow = a.call("session.send", {"session_id": busy.id, "text": "then this", "kind": "follow_up"})
            gateway.model.enqueue("second answer")
            stop = {"session_id": busy.id, "execution_id": busy.execution_id}
            together(busy.gate.open, partial(b.call, "session.stop", stop))
            ended = a.event(partial(has_ended, busy.execution_id))
            outcomes[ended["state"]] += 1
            if ended["state"] == "interrupted":
                a.call("session.continue", {"session_id": busy.id})  # a stop starts nothing by itself
            done = a.call("session.wait", {"submission_id": follow["id"], "timeout": TIMEOUT})
            assert done["state"] == "completed", done
            assert done["execution_id"] != busy.execution_id
            # One more stop of the first execution, now long over: a no-op.
            assert b.call("session.stop", stop) == {"stopped": False}
            texts = user_texts(a, busy.id)
            assert texts == ["start", "then this"]
    assert sum(outcomes.values()) == ROUNDS
