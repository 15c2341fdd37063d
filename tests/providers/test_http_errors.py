"""The rules that sort a failed call into transient, overflow or fatal, on plain values (SPEC R3, R5)."""

from __future__ import annotations

import email.utils
import time

import pytest

from anyy.providers import http_errors


@pytest.mark.parametrize(
    ("status", "code", "error_type", "message", "kind"),
    [
        (429, None, "rate_limit_error", "slow down", "transient"),
        (500, None, "api_error", "oops", "transient"),
        (502, None, None, "bad gateway", "transient"),
        (529, None, "overloaded_error", "Overloaded", "transient"),
        (408, None, None, "timeout", "transient"),
        (400, "context_length_exceeded", "invalid_request_error", "too many", "overflow"),
        (400, None, "invalid_request_error", "prompt is too long: 210000 tokens > 200000 maximum", "overflow"),
        (400, None, None, "This model's maximum context length is 4096 tokens", "overflow"),
        (400, None, "exceed_context_size_error", "the request exceeds the available context size", "overflow"),
        (400, None, None, "the request exceeds the available context size, try increasing it", "overflow"),
        (413, None, "request_too_large", "Request exceeds the maximum allowed number of bytes", "overflow"),
        (400, None, "invalid_request_error", "tools.0.name: String should match pattern", "fatal"),
        (401, None, "authentication_error", "invalid x-api-key", "fatal"),
        (403, None, "permission_error", "no access", "fatal"),
        (404, None, "not_found_error", "model: nope", "fatal"),
        (None, None, "overloaded_error", "Overloaded", "transient"),
        (None, None, None, "something broke", "transient"),
    ],
)
def test_r3_r5_failures_are_classified(
    status: int | None, code: str | None, error_type: str | None, message: str, kind: str
) -> None:
    assert http_errors.classify(status, code=code, error_type=error_type, message=message) == kind


def test_r3_retry_after_in_seconds_milliseconds_or_a_date() -> None:
    assert http_errors.retry_after({"Retry-After": "12"}) == 12.0
    assert http_errors.retry_after({"retry-after": "1.5"}) == 1.5
    assert http_errors.retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    soon = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 25 <= (http_errors.retry_after({"retry-after": soon}) or 0) <= 31
    past = email.utils.formatdate(time.time() - 30, usegmt=True)
    assert http_errors.retry_after({"retry-after": past}) == 0.0
    assert http_errors.retry_after({"retry-after": "soon"}) is None
    assert http_errors.retry_after({}) is None


def test_r3_retry_after_is_kept_only_for_transient_errors() -> None:
    error = http_errors.status_error("p", 400, body={"error": {"message": "bad"}}, headers={"retry-after": "3"})
    assert (error.kind, error.retry_after) == ("fatal", None)
    error = http_errors.status_error("p", 503, body={}, headers={"retry-after": "3"}, fallback="Error code: 503")
    assert (error.kind, error.retry_after, error.status) == ("transient", 3.0, 503)
    assert "Error code: 503" in error.message


def test_m5_error_bodies_of_several_shapes_give_their_message() -> None:
    assert http_errors.body_message({"error": {"message": "a"}}) == "a"
    assert http_errors.body_message({"type": "error", "error": {"type": "x", "message": "b"}}) == "b"
    assert http_errors.body_message({"error": "c"}) == "c"
    assert http_errors.body_message({"message": "d"}) == "d"
    assert http_errors.body_message("e") == "e"
    assert http_errors.body_message(None) == ""
