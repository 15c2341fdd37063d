"""Fuzzing the API (G2): malformed JSON, wrong types, unknown methods, huge strings, unknown and
foreign-profile ids, and random parameters for every method of the table. Whatever arrives, no exception
escapes, every reply is a well-formed JSON-RPC response with a known error code (never an internal
fault) or a result, and afterwards a normal request still works.

Most of the volume goes straight to the Dispatcher (fast); a few hundred frames go over a real
WebSocket. ``ANYY_FUZZ_EXAMPLES`` multiplies the number of examples for longer runs.
"""

from __future__ import annotations

import json
import os
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from anyy.gateway.methods import TABLE
from commons import jsonrpc
from tests.gateway.live import LiveGateway, is_state

SCALE = float(os.environ.get("ANYY_FUZZ_EXAMPLES", "1"))
DISPATCHER_EXAMPLES = int(700 * SCALE)
WEBSOCKET_EXAMPLES = int(60 * SCALE)
FRAMES_PER_EXAMPLE = 12  # at most; every frame (and every call in a batch) counts as a request
MIN_FRAMES = 4
# Writes an archive at a path the client names: not something to aim random paths at.
NOT_FUZZED = {"profile.backup"}
METHODS = sorted(name for name in TABLE.methods if name not in NOT_FUZZED)


class Pool:
    """Ids the fuzz draws from: real ones of this profile, ones of another profile, made-up ones."""

    sessions: list[str]
    submissions: list[str]
    executions: list[str]
    entries: list[int]
    foreign: list[str]


POOL = Pool()


@pytest.fixture(scope="module")
def fuzzed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveGateway]:
    root: Path = tmp_path_factory.mktemp("fuzz")
    with LiveGateway(root, profile_name="other", serve=False) as other:
        foreign_session = other.call("session.create")["id"]
        foreign_sub = other.call("session.send", {"session_id": foreign_session, "text": "x"})["id"]
    with LiveGateway(root) as live, live.ws() as client:
        sessions, submissions, executions, entries = [], [], [], []
        for i in range(3):
            session = client.call("session.create", {"title": f"s{i}"})
            client.call("events.subscribe", {"session_id": session["id"]})
            live.model.enqueue(f"answer {i}")
            sub = client.call("session.send", {"session_id": session["id"], "text": f"question {i}"})
            done = client.event(is_state("completed"))
            sessions.append(session["id"])
            submissions.append(sub["id"])
            executions.append(done["execution_id"])
            entries += [e["id"] for e in client.call("session.history", {"session_id": session["id"]})["items"]]
        POOL.sessions, POOL.submissions, POOL.executions, POOL.entries = sessions, submissions, executions, entries
        POOL.foreign = [foreign_session, foreign_sub]
        yield live


# -- strategies -----------------------------------------------------------------------------------------
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=8,
)
huge_strings = st.builds(lambda n, c: c * n, st.integers(10_000, 200_000), st.sampled_from(["a", "é", "\x00", "😀"]))
made_up_ids = st.sampled_from(["", "ses_", "sub_x", "exe_0", "../../etc/passwd", "' OR 1=1 --", "%s"]) | st.text(
    max_size=12
)


def id_strategy(name: str) -> st.SearchStrategy[Any]:
    def real() -> list[str]:
        if "submission" in name:
            return POOL.submissions
        if "execution" in name:
            return POOL.executions
        return POOL.sessions

    return st.one_of(
        st.deferred(lambda: st.sampled_from(real())),
        st.deferred(lambda: st.sampled_from(POOL.foreign)),
        made_up_ids,
    )


def value_for(name: str, tp: Any) -> st.SearchStrategy[Any]:
    """Mostly a value of the right type (so handlers are reached), sometimes anything at all."""
    if name.endswith("_id") and name != "entry_id":
        right = id_strategy(name)
    elif name == "entry_id":
        right = st.one_of(st.none(), st.deferred(lambda: st.sampled_from(POOL.entries)), st.integers(-5, 2**62))
    elif name == "timeout":
        right = st.floats(min_value=-1, max_value=0.02)
    elif name == "limit":
        right = st.integers(-10, 500)
    else:
        right = type_values(tp)
    return st.one_of(*[right] * 8, json_values, huge_strings)


def type_values(tp: Any) -> st.SearchStrategy[Any]:
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is typing.Literal:
        return st.sampled_from(args)
    if origin is typing.Union or origin is type(int | None):
        return st.one_of(*[type_values(a) for a in args])
    if tp is type(None):
        return st.none()
    if tp is str:
        return st.text(max_size=40)
    if tp is bool:
        return st.booleans()
    if tp is int:
        return st.integers(-(2**63), 2**63)
    if tp is float:
        return st.floats(allow_nan=False, allow_infinity=False)
    if origin is list:
        return st.lists(type_values(args[0]) if args else json_values, max_size=3)
    if isinstance(tp, type) and issubclass(tp, msgspec.Struct):
        hints = typing.get_type_hints(tp)
        return st.fixed_dictionaries({f.encode_name: type_values(hints[f.name]) for f in msgspec.structs.fields(tp)})
    return json_values


def params_for(method: str) -> st.SearchStrategy[Any]:
    struct = TABLE.methods[method].params if method in TABLE.methods else None
    if struct is None:
        return st.one_of(st.none(), st.dictionaries(st.text(max_size=8), json_values, max_size=3))
    hints = typing.get_type_hints(struct)
    fields = msgspec.structs.fields(struct)
    named = st.fixed_dictionaries(
        {},
        optional={f.encode_name: value_for(f.name, hints[f.name]) for f in fields},
    )
    extra = st.dictionaries(st.text(max_size=8), json_values, min_size=1, max_size=2)
    return st.one_of(named, named, named, st.builds(lambda a, b: {**a, **b}, named, extra), json_values)


method_names = st.one_of(
    st.sampled_from(METHODS),
    st.sampled_from(METHODS).map(lambda m: m[:-1]),
    st.sampled_from(METHODS).map(lambda m: m.upper()),
    st.text(max_size=30),
)
ids = st.one_of(st.integers(-(2**53), 2**53), st.text(max_size=10), st.none(), json_values)


@st.composite
def requests(draw: st.DrawFn) -> Any:
    method = draw(method_names)
    frame: dict[str, Any] = {"jsonrpc": draw(st.sampled_from(["2.0", "2.0", "2.0", "1.0", 2]))}
    frame["method"] = method if draw(st.integers(0, 20)) else draw(json_values)
    if draw(st.booleans()) or method in TABLE.methods:
        frame["params"] = draw(params_for(method))
    if draw(st.integers(0, 5)):
        frame["id"] = draw(ids)
    if not draw(st.integers(0, 15)):
        frame[draw(st.text(max_size=6))] = draw(json_values)
    return frame


def _encode(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass")


@st.composite
def frames(draw: st.DrawFn) -> tuple[bytes, int]:
    """One frame and how many requests it carries."""
    kind = draw(st.integers(0, 19))
    if kind == 0:
        return draw(st.binary(max_size=64)), 1
    if kind == 1:
        text = _encode(draw(requests()))
        return text[: draw(st.integers(0, len(text)))], 1  # cut short
    if kind == 2:
        return _encode(draw(json_values)), 1
    if kind == 3:
        batch = draw(st.lists(st.one_of(requests(), json_values), max_size=6))
        return _encode(batch), max(len(batch), 1)
    return _encode(draw(requests())), 1


def variants(frame: bytes) -> list[tuple[bytes, int]]:
    """Cheap relatives of a generated request (no generation cost): as a notification, with its
    parameters by position, and twice in a batch."""
    try:
        data = json.loads(frame)
    except ValueError:
        return []
    if not isinstance(data, dict):
        return []
    out = [(_encode({k: v for k, v in data.items() if k != "id"}), 1), (_encode([data, data]), 2)]
    if isinstance(data.get("params"), dict):
        out.append((_encode({**data, "params": list(data["params"].values())}), 1))
    return out


# -- checks ---------------------------------------------------------------------------------------------
def check_reply(frame: bytes, reply: bytes | None) -> None:
    if reply is None:
        return  # notifications only; whether one was owed is checked by the protocol tests
    decoded = json.loads(reply)
    for response in decoded if isinstance(decoded, list) else [decoded]:
        assert isinstance(response, dict), reply
        assert response.get("jsonrpc") == "2.0", reply
        assert "id" in response
        assert ("result" in response) != ("error" in response), reply
        if "error" in response:
            error = response["error"]
            assert error["code"] in jsonrpc.ERROR_NAMES, reply
            assert error["code"] != jsonrpc.INTERNAL_ERROR, (frame[:500], error)
            assert isinstance(error["message"], str)
            assert error["message"]
            assert "Traceback" not in error["message"]


def still_works(live: LiveGateway) -> None:
    assert live.call("gateway.status")["profile"] == "default"
    created = live.call("session.create", {"title": "after the fuzz"})
    assert live.call("session.get", {"session_id": created["id"]})["session"]["title"] == "after the fuzz"


class Counted:
    requests = 0
    markers = 0


def test_g2_fuzz_the_dispatcher_with_thousands_of_requests(fuzzed: LiveGateway) -> None:
    assert fuzzed.dispatcher is not None
    dispatcher = fuzzed.dispatcher
    counted = Counted()

    async def play(batch: list[tuple[bytes, int]]) -> list[tuple[bytes, bytes | None]]:
        return [(frame, await dispatcher.handle(frame, None)) for frame, _ in batch]

    def with_variants(batch: list[tuple[bytes, int]]) -> list[tuple[bytes, int]]:
        return [item for frame, n in batch for item in [(frame, n), *variants(frame)]]

    @settings(
        max_examples=DISPATCHER_EXAMPLES,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
    )
    @given(st.lists(frames(), min_size=1, max_size=FRAMES_PER_EXAMPLE))
    def fuzz(batch: list[tuple[bytes, int]]) -> None:
        batch = with_variants(batch)
        for frame, reply in fuzzed.run(play(batch), timeout=30):
            check_reply(frame, reply)
        counted.requests += sum(n for _, n in batch)

    fuzz()
    assert counted.requests >= 10_000 * min(SCALE, 1)
    still_works(fuzzed)


def test_g2_fuzz_over_a_real_websocket(fuzzed: LiveGateway) -> None:
    counted = Counted()
    with fuzzed.ws() as client:

        @settings(
            max_examples=WEBSOCKET_EXAMPLES,
            deadline=None,
            database=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
        )
        @given(st.lists(frames(), min_size=MIN_FRAMES, max_size=FRAMES_PER_EXAMPLE))
        def fuzz(batch: list[tuple[bytes, int]]) -> None:
            for frame, _ in batch:
                client.send_raw(frame.decode("utf-8", "replace"))
            # A marker call after the batch: every reply owed before it has arrived once it has.
            counted.markers += 1
            marker = f"marker-{counted.markers}"  # no fuzzed id is ever this
            client.send_raw(jsonrpc.request("gateway.status", {}, marker))
            reply = client.reply_to(marker)
            assert reply["result"]["profile"] == "default"
            for reply in [*client.replies.values(), *client.others]:
                check_reply(b"(websocket)", json.dumps(reply).encode())
            client.replies.clear()
            client.others.clear()
            counted.requests += sum(n for _, n in batch)

        fuzz()
        # The amount of fuzzing is fixed by construction, not by luck: every example sends at least
        # MIN_FRAMES frames (a bound on the random total near its mean failed one run in a few).
        assert counted.markers >= WEBSOCKET_EXAMPLES // 2
        assert counted.requests >= MIN_FRAMES * counted.markers
        assert client.call("gateway.status")["profile"] == "default"
    still_works(fuzzed)
