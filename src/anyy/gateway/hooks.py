"""Residents' webhooks (K3): ``POST /hooks/NAME``; the body (UTF-8, at most 64 KiB) becomes a follow-up of
the resident's session: 202 with the submission's id when accepted.

The caller proves itself in one of two ways (docs/background.md says how to sign):

- the resident's own secret, ``Authorization: Bearer SECRET`` (not the Gateway's token), unless
  ``[webhooks] require_signature`` is on;
- a signature: ``X-Anyy-Timestamp: UNIX_SECONDS`` and ``X-Anyy-Signature: sha256=HEX``, the HMAC-SHA256
  of ``TIMESTAMP.BODY`` keyed by the lowercase hex SHA-256 of the secret. The timestamp must be within
  ``max_skew`` seconds of the Gateway's clock, and a signature is taken once (a replay is refused): the
  secret never travels and a captured call cannot be played again.

An unknown name and wrong credentials get the same 401 (names cannot be probed). Each name takes at most
``per_minute`` calls a minute (429 with ``Retry-After``, counted before anything else, known name or not);
a resident with ``max_queued`` wakes waiting refuses more (429) and keeps what it accepted. Every refusal
is logged in one line, without the credentials.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import math
import time
from collections.abc import Awaitable, Callable

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from anyy.domain.errors import StorageFull
from anyy.domain.residents import MAX_HOOK_BYTES, Resident, secret_matches
from anyy.gateway.dispatcher import Dispatcher
from anyy.profiles.config import WebhookSettings
from anyy.runtime.residents import HOOK_UNAUTHORIZED, HookRefused

log = logging.getLogger("anyy.gateway.hooks")
TIMESTAMP_HEADER = "x-anyy-timestamp"
SIGNATURE_HEADER = "x-anyy-signature"
_TRACKED_NAMES = 4096  # names whose rate is remembered; the oldest is forgotten beyond this


class RateLimit:
    """A token bucket per name: ``per_minute`` calls at once, refilled at ``per_minute`` a minute."""

    def __init__(self, per_minute: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.per_minute = per_minute
        self._clock = clock
        self._buckets: dict[str, tuple[float, float]] = {}  # name -> (tokens, when counted)

    def take(self, name: str) -> float:
        """0 when the call may go on (one token taken), else the seconds until one is back."""
        now = self._clock()
        rate = self.per_minute / 60.0
        tokens, then = self._buckets.pop(name, (float(self.per_minute), now))
        tokens = min(float(self.per_minute), tokens + (now - then) * rate)
        wait = 0.0 if tokens >= 1 else (1 - tokens) / rate
        self._buckets[name] = (tokens - 1 if not wait else tokens, now)
        if len(self._buckets) > _TRACKED_NAMES:
            del self._buckets[next(iter(self._buckets))]
        return wait


class Signatures:
    """The signed mode: a timestamp within the skew, an HMAC of ``TIMESTAMP.BODY``, each signature once."""

    def __init__(self, max_skew: int, clock: Callable[[], float] = time.time) -> None:
        self.max_skew = max_skew
        self._clock = clock
        self._seen: dict[str, float] = {}  # signature -> until when it is remembered

    def check(self, resident: Resident, timestamp: str, signature: str, body: bytes) -> str:
        """ "" when the call is signed by the resident's secret, fresh and new; else why not (logged only)."""
        now = self._clock()
        for seen, until in list(self._seen.items()):
            if until < now:
                del self._seen[seen]
        if not resident.secret_hash or not timestamp.isdigit():
            return "no valid timestamp"
        if abs(now - int(timestamp)) > self.max_skew:
            return f"timestamp {timestamp} is more than {self.max_skew} s off"
        expected = sign(resident.secret_hash, timestamp, body)
        if not hmac.compare_digest(signature.encode(), expected.encode()):
            return "bad signature"
        if f"{resident.id}:{signature}" in self._seen:
            return "signature already used (a replay)"
        return ""

    def remember(self, resident_id: str, signature: str) -> None:
        self._seen[f"{resident_id}:{signature}"] = self._clock() + 2 * self.max_skew

    def forget(self, resident_id: str, signature: str) -> None:
        self._seen.pop(f"{resident_id}:{signature}", None)


def sign(secret_hash: str, timestamp: str, body: bytes) -> str:
    """The ``X-Anyy-Signature`` value of a call: keyed by the hex SHA-256 of the secret (what the Gateway
    keeps), over ``TIMESTAMP.BODY``."""
    digest = hmac.new(secret_hash.encode(), timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()
    return f"sha256={digest}"


def hook_route(dispatcher: Dispatcher, settings: WebhookSettings) -> Callable[[Request], Awaitable[Response]]:
    limits = RateLimit(settings.per_minute)
    signatures = Signatures(settings.max_skew)

    async def hook(request: Request) -> Response:
        name = request.path_params["name"]
        client = request.client.host if request.client is not None else "?"

        def refuse(status: int, message: str, why: str, *, retry_after: int = 0) -> Response:
            log.warning("webhook %r refused (%d, %s) from %s", name[:64], status, why, client)
            headers = {"Retry-After": str(retry_after)} if retry_after else None
            return JSONResponse({"error": message}, status_code=status, headers=headers)

        wait = limits.take(name)
        if wait:
            after = max(1, math.ceil(wait))
            return refuse(
                429,
                f"too many webhook calls for this name: at most {settings.per_minute} a minute; retry in {after} s",
                "rate limit",
                retry_after=after,
            )
        declared = int(request.headers.get("content-length") or 0)
        if declared > MAX_HOOK_BYTES:
            return refuse(413, _too_large(declared), "body too large")
        body = b""
        async for chunk in request.stream():
            body += chunk
            if len(body) > MAX_HOOK_BYTES:
                return refuse(413, _too_large(len(body)), "body too large")
        timestamp = request.headers.get(TIMESTAMP_HEADER, "")
        signature = request.headers.get(SIGNATURE_HEADER, "")
        presented = _secret(request.headers.get("authorization", ""))
        why: list[str] = []
        taken: list[str] = []

        def authentic(resident: Resident) -> bool:
            if signature or timestamp:
                problem = signatures.check(resident, timestamp, signature, body)
                if problem:
                    why.append(problem)
                    return False
                signatures.remember(resident.id, signature)  # taken now: a second copy in flight is a replay
                taken.append(resident.id)
                return True
            if settings.require_signature:
                why.append("unsigned call, signatures required")
                return False
            if not secret_matches(resident, presented):
                why.append("wrong or missing secret")
                return False
            return True

        try:
            submission = await dispatcher.gateway.runtime.residents.hook(
                name, body, authentic, max_queued=settings.max_queued
            )
        except HookRefused as refused:
            for resident_id in taken:  # refused after the check (paused, queue full): the caller may retry it
                signatures.forget(resident_id, signature)
            reason = why[0] if why else ("unknown name or webhook off" if str(refused) == HOOK_UNAUTHORIZED else "")
            reason = reason or str(refused)
            return refuse(refused.status, str(refused), reason, retry_after=refused.retry_after)
        except StorageFull as exc:
            return refuse(507, str(exc), "storage full")
        return JSONResponse({"submission_id": submission.id, "session_id": submission.session_id}, status_code=202)

    return hook


def _secret(header: str) -> str:
    scheme, _, value = header.partition(" ")
    return value.strip() if scheme.lower() == "bearer" else ""


def _too_large(size: int) -> str:
    return f"the body is too large ({size} bytes or more): at most {MAX_HOOK_BYTES >> 10} KiB"
