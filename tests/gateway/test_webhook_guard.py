"""K5: a resident's webhook under attack: names cannot be probed (an unknown name and a wrong secret get
the same answer), calls are rate-limited per name, queued wakes are bounded (excess refused with 429, what
was accepted kept), signed calls are taken once within the allowed skew, and every refusal is logged in one
line without the credentials. A real Gateway on a socket."""

from __future__ import annotations

import hashlib
import hmac
import http.client
import json
import logging
import time
from pathlib import Path
from typing import Any

import pytest

from anyy.domain.model_io import TextDelta
from anyy.providers.gates import Gate
from tests.fakes.gateways import TIMEOUT, LiveGateway, wait_gate


def configured(tmp_path: Path, webhooks: str) -> LiveGateway:
    live = LiveGateway(tmp_path)
    live.profile.config_path.write_text(live.profile.config_path.read_text() + f"\n[webhooks]\n{webhooks}\n")
    return live


def post(live: LiveGateway, name: str, body: bytes, headers: dict[str, str]) -> tuple[int, Any, dict[str, str]]:
    conn = http.client.HTTPConnection("127.0.0.1", live.port, timeout=TIMEOUT)
    try:
        conn.request("POST", f"/hooks/{name}", body=body, headers={"Content-Type": "text/plain", **headers})
        response = conn.getresponse()
        return response.status, json.loads(response.read() or b"null"), {k.lower(): v for k, v in response.getheaders()}
    finally:
        conn.close()


def bearer(secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"}


def signed(secret: str, body: bytes, *, at: float | None = None) -> dict[str, str]:
    """What docs/background.md tells a caller to send: the HMAC-SHA256, keyed by the hex SHA-256 of the
    secret, of ``TIMESTAMP.BODY``."""
    timestamp = str(int(time.time() if at is None else at))
    key = hashlib.sha256(secret.encode()).hexdigest().encode()
    digest = hmac.new(key, timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()
    return {"X-Anyy-Timestamp": timestamp, "X-Anyy-Signature": f"sha256={digest}"}


def resident(live: LiveGateway, name: str = "inbox", *, webhook: bool = True) -> dict[str, Any]:
    made: dict[str, Any] = live.call("resident.create", {"name": name, "instructions": "File it.", "webhook": webhook})
    return made


def queued(live: LiveGateway, made: dict[str, Any]) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = live.call("session.queue.list", {"session_id": made["resident"]["session_id"]})
    return items


def test_k5_an_unknown_name_and_a_wrong_secret_get_the_same_answer_and_a_log_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with LiveGateway(tmp_path) as live, caplog.at_level(logging.WARNING, logger="anyy.gateway.hooks"):
        made = resident(live)
        resident(live, "quiet", webhook=False)
        answers = [
            post(live, "inbox", b"x", bearer("wrong-secret")),
            post(live, "inbox", b"x", {}),
            post(live, "nobody", b"x", bearer(made["secret"])),
            post(live, "quiet", b"x", bearer(made["secret"])),
            post(live, "inbox", b"x", bearer(live.token)),
        ]
        assert {(status, json.dumps(body)) for status, body, _ in answers} == {
            (answers[0][0], json.dumps(answers[0][1]))
        }
        assert answers[0][0] == 401
        assert queued(live, made) == []
    refusals = [r.getMessage() for r in caplog.records if r.name == "anyy.gateway.hooks"]
    assert len(refusals) == len(answers)
    assert all("refused (401" in line for line in refusals)
    assert not any(secret in line for line in refusals for secret in (made["secret"], "wrong-secret", live.token))


def test_k5_calls_past_the_rate_limit_are_429_with_retry_after(tmp_path: Path) -> None:
    # One call a minute per name: the second, at once, is over (a refill takes 60 s, far beyond this test).
    with configured(tmp_path, "per_minute = 1") as live:
        made = resident(live)
        live.model.enqueue("Filed.")
        assert post(live, "inbox", b"first", bearer(made["secret"]))[0] == 202
        status, body, headers = post(live, "inbox", b"second", bearer(made["secret"]))
        assert status == 429
        assert "at most 1 a minute" in body["error"]
        assert 1 <= int(headers["retry-after"]) <= 60
        # Unknown names are limited alike (nothing tells them apart), each name on its own.
        assert post(live, "nobody", b"x", {})[0] == 401
        assert post(live, "nobody", b"x", {})[0] == 429
        texts = [
            e["text"] for e in live.call("session.history", {"session_id": made["resident"]["session_id"]})["items"]
        ]
        assert not any("second" in text for text in texts)


def test_k5_queued_wakes_past_the_bound_are_refused_and_the_accepted_ones_kept(tmp_path: Path) -> None:
    with configured(tmp_path, "max_queued = 2") as live:
        made = resident(live)
        gate = Gate("the first wake's answer")
        live.model.enqueue([gate, TextDelta(text="one")], "two", "three")
        first = post(live, "inbox", b"wake one", bearer(made["secret"]))
        assert first[0] == 202
        wait_gate(gate)  # the first wake runs; the next ones wait in the queue
        accepted = [post(live, "inbox", f"wake {n}".encode(), bearer(made["secret"])) for n in ("two", "three")]
        assert [status for status, _, _ in accepted] == [202, 202]
        status, body, headers = post(live, "inbox", b"wake four", bearer(made["secret"]))
        assert status == 429
        assert "2 wakes waiting already (at most 2)" in body["error"]
        assert int(headers["retry-after"]) > 0
        assert len(queued(live, made)) == 2
        gate.open()
        for _, reply, _ in [first, *accepted]:
            done = live.call("session.wait", {"submission_id": reply["submission_id"], "timeout": TIMEOUT})
            assert done["state"] == "completed"
        items = live.call("session.history", {"session_id": made["resident"]["session_id"], "limit": 50})["items"]
        woken = [e["text"].split("\n")[0] for e in items if e["kind"] == "user"]
        assert sorted(woken) == ["[webhook] wake one", "[webhook] wake three", "[webhook] wake two"]  # not four


def test_k5_signed_calls_are_taken_once_within_the_skew_and_bare_secrets_refused_when_required(
    tmp_path: Path,
) -> None:
    with configured(tmp_path, "require_signature = true\nmax_skew = 300") as live:
        made = resident(live)
        secret = made["secret"]
        live.model.enqueue("Filed.")
        assert post(live, "inbox", b"plain", bearer(secret))[0] == 401  # the secret alone is not enough now
        body = b'{"event": "push"}'
        headers = signed(secret, body)
        status, reply, _ = post(live, "inbox", body, headers)
        assert status == 202, reply
        assert post(live, "inbox", body, headers)[0] == 401  # the same call again: a replay
        assert post(live, "inbox", b'{"event": "other"}', headers)[0] == 401  # another body, same signature
        assert post(live, "inbox", body, signed(secret, body, at=time.time() - 1000))[0] == 401  # too old
        assert post(live, "inbox", body, signed("not-the-secret", body))[0] == 401
        assert post(live, "nobody", body, signed(secret, body))[0] == 401
        done = live.call("session.wait", {"submission_id": reply["submission_id"], "timeout": TIMEOUT})
        assert done["state"] == "completed"
        assert len(queued(live, made)) == 0
