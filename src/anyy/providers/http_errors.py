"""Sorting an HTTP API's failures into the three :class:`ProviderError` kinds, for every adapter.

The SDKs each have their own exception classes; what decides the kind is the same everywhere: the status,
the error's code or type, and (for context overflow, which no API reports with one stable code) words in
the message. Nothing here imports an SDK, so the rules are tested on plain values.
"""

from __future__ import annotations

import email.utils
import math
import re
import time
from collections.abc import Mapping
from typing import Any

from anyy.domain.model_io import ErrorClass
from anyy.providers.base import ProviderError

# 408 request timeout, 409 a conflict the server resolves by itself, 425 too early: all worth another try,
# as are rate limits (429), overloads (529, Anthropic) and every 5xx.
_TRANSIENT_STATUSES = frozenset({408, 409, 425, 429})
# Error types some servers send with 200 in the middle of a stream, or with a status that says less.
_TRANSIENT_TYPES = frozenset(
    {"overloaded_error", "rate_limit_error", "api_error", "server_error", "rate_limit_exceeded", "timeout_error"}
)
# OpenAI and vLLM say context_length_exceeded, llama.cpp exceed_context_size_error; Anthropic only words it.
_OVERFLOW_CODES = frozenset(
    {"context_length_exceeded", "exceed_context_size_error", "string_above_max_length", "request_too_large"}
)
_OVERFLOW_WORDS = re.compile(
    r"context[ _-]?(length|window|size)|prompt is too long|too many tokens|maximum context|"
    r"exceeds? (the )?(model'?s? )?(maximum )?(context|token limit)|input is too long|reduce the length",
    re.IGNORECASE,
)


def looks_like_overflow(message: str, code: str | None = None, error_type: str | None = None) -> bool:
    """Whether an error says the prompt does not fit the model's context window."""
    if (code or "") in _OVERFLOW_CODES or (error_type or "") in _OVERFLOW_CODES:
        return True
    return _OVERFLOW_WORDS.search(message) is not None


def classify(
    status: int | None, *, code: str | None = None, error_type: str | None = None, message: str = ""
) -> ErrorClass:
    """The kind of a failed call. ``status`` is None when no HTTP status says anything (a stream error)."""
    if looks_like_overflow(message, code, error_type) or status == 413:
        return "overflow"
    if status is not None and (status >= 500 or status in _TRANSIENT_STATUSES):
        return "transient"
    if (error_type or "") in _TRANSIENT_TYPES or (code or "") in _TRANSIENT_TYPES:
        return "transient"
    if status is None or status == 200:
        # An error event inside a stream that started fine: the request was valid, so the failure was
        # the server's; retrying is what a person would do.
        return "transient"
    return "fatal"


def retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds the server asked us to wait: ``retry-after-ms``, else ``retry-after`` (seconds or a date)."""
    lowered = {key.lower(): value for key, value in headers.items()}
    millis = lowered.get("retry-after-ms")
    if millis:
        try:
            value = float(millis) / 1000
        except ValueError:
            value = math.nan
        if math.isfinite(value) and value >= 0:
            return value
    raw = lowered.get("retry-after")
    if not raw:
        return None
    try:
        seconds = float(raw)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(raw)
        except (TypeError, ValueError):
            return None
        seconds = when.timestamp() - time.time()
    return max(0.0, seconds) if math.isfinite(seconds) else None


def body_message(body: object) -> str:
    """The human part of a JSON error body (``{"error": {"message": ...}}`` and its variants)."""
    if isinstance(body, Mapping):
        error: Any = body.get("error", body)
        if isinstance(error, Mapping):
            message = error.get("message")
            if isinstance(message, str) and message:
                return message
        elif isinstance(error, str) and error:
            return error
        message = body.get("message")
        if isinstance(message, str) and message:
            return message
    elif isinstance(body, str):
        return body
    return ""


def body_field(body: object, name: str) -> str | None:
    """``error.NAME`` (or ``NAME``) of a JSON error body, as text."""
    if isinstance(body, Mapping):
        error = body.get("error", body)
        if isinstance(error, Mapping) and error.get(name) is not None:
            return str(error[name])
        if body.get(name) is not None:
            return str(body[name])
    return None


_ADVICE = {
    401: "check the API key{key}",
    403: "the key{key} is not allowed to use this model or endpoint",
    404: "check the model name and the provider's base_url",
    402: "the account needs credit or a plan",
}


def status_error(
    provider: str,
    status: int,
    *,
    body: object,
    headers: Mapping[str, str],
    key_env: str = "",
    fallback: str = "",
) -> ProviderError:
    """A ProviderError for an HTTP error response, with a message that says what to do."""
    message = body_message(body) or fallback or "no details given"
    code = body_field(body, "code")
    error_type = body_field(body, "type")
    kind = classify(status, code=code, error_type=error_type, message=message)
    if kind == "overflow":
        text = f"{provider}: the conversation is too long for the model's context ({status}): {message}"
    elif kind == "transient":
        text = f"{provider} is busy or failing ({status}), worth retrying: {message}"
    else:
        advice = _ADVICE.get(status, "the request was refused as written")
        advice = advice.format(key=f" in ${key_env}" if key_env else "")
        text = f"{provider} refused the request ({status}): {message} ({advice})"
    wait = retry_after(headers) if kind == "transient" else None
    return ProviderError(kind, text, status=status, retry_after=wait)


def stream_error(provider: str, *, body: object, fallback: str = "") -> ProviderError:
    """A ProviderError for an error event inside a stream that had started (no meaningful status)."""
    message = body_message(body) or fallback or "the stream reported an error"
    kind = classify(None, code=body_field(body, "code"), error_type=body_field(body, "type"), message=message)
    if kind == "overflow":
        return ProviderError(kind, f"{provider}: the conversation is too long for the model's context: {message}")
    return ProviderError(kind, f"{provider} failed in the middle of its answer, worth retrying: {message}")


def dropped(provider: str, detail: str = "") -> ProviderError:
    """The connection or the stream ended before the model said it had finished."""
    suffix = f" ({detail})" if detail else ""
    return ProviderError("transient", f"{provider}: the answer was cut off before it finished{suffix}")


def unreachable(provider: str, base_url: str, detail: str) -> ProviderError:
    return ProviderError("transient", f"can't reach {provider} at {base_url}: {detail}")


def timed_out(provider: str, base_url: str) -> ProviderError:
    return ProviderError("transient", f"{provider} at {base_url} did not answer in time (HTTP timeout)")


def missing_key(provider: str, key_env: str) -> ProviderError:
    """The provider needs a key and the variable that should hold it is empty: fatal, said plainly."""
    return ProviderError(
        "fatal",
        f"{provider}: no API key: ${key_env} is not set in the Gateway's environment "
        "(set it and restart the Gateway, or change api_key_env in config.toml)",
    )
