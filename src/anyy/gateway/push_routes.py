"""The Web Push routes of a paired device (O3): ``GET /push/key`` (the profile's VAPID public key, for the
browser's ``pushManager.subscribe``) and ``POST /push/subscribe`` (the subscription the browser made, the
kinds of message it wants, and whether they may carry the conversation's text). Only a device's cookie
subscribes: the push goes to that device, and stops when it is revoked."""

from __future__ import annotations

import asyncio
import json
import logging
from urllib.parse import urlsplit

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from anyy.gateway.access import Access
from anyy.gateway.push import application_server_key
from anyy.profiles.devices import PUSH_KINDS, PushTarget

log = logging.getLogger("anyy.gateway")
MAX_SUBSCRIPTION_BYTES = 8192


class PushRoutes:
    def __init__(self, access: Access, caller_of: object) -> None:
        self.access = access
        self.caller_of = caller_of  # HttpRoutes._caller: the same authentication and Origin rules

    async def key(self, request: Request) -> Response:
        caller = self.caller_of(request)  # type: ignore[operator]
        if isinstance(caller, Response):
            return caller
        profile = self.access.dispatcher.gateway.profile
        key = await asyncio.to_thread(application_server_key, profile)  # made once, off the loop
        return JSONResponse({"key": key})

    async def subscribe(self, request: Request) -> Response:
        caller = self.caller_of(request)  # type: ignore[operator]
        if isinstance(caller, Response):
            return caller
        remote = self.access.remote
        if caller.device is None or remote is None:
            return JSONResponse({"error": "push goes to paired devices: pair this one with `anyy devices pair`"}, 400)
        body = b""
        async for chunk in request.stream():
            body += chunk
            if len(body) > MAX_SUBSCRIPTION_BYTES:
                return JSONResponse({"error": "the subscription is too large"}, 413)
        try:
            target = _target(json.loads(body or b"null"))
        except ValueError as exc:
            return JSONResponse({"error": str(exc)}, 400)
        remote.book.set_push(caller.device.id, target)
        device = caller.device
        kinds = ", ".join(target.kinds) if target is not None else "nothing"
        log.info("device %r (%s) takes pushes for %s", device.name, device.id, kinds)
        return JSONResponse(
            {"kinds": target.kinds if target is not None else [], "content": bool(target and target.content)}
        )


def _target(asked: object) -> PushTarget | None:
    """The subscription as the browser's ``PushSubscription.toJSON()`` gives it, checked; null unsubscribes."""
    if asked is None:
        return None
    if not isinstance(asked, dict):
        raise ValueError('give {"subscription": {"endpoint": …, "keys": {"p256dh": …, "auth": …}}, "kinds": […]}')
    sub = asked.get("subscription")
    if sub is None:
        return None
    keys = sub.get("keys") if isinstance(sub, dict) else None
    endpoint = sub.get("endpoint") if isinstance(sub, dict) else None
    if not isinstance(endpoint, str) or not isinstance(keys, dict):
        raise ValueError("subscription: give the browser's PushSubscription (endpoint and keys)")
    parts = urlsplit(endpoint)
    if parts.scheme != "https" or not parts.hostname or len(endpoint) > 2048:
        raise ValueError("subscription.endpoint: a push service's https:// address")
    p256dh, auth = keys.get("p256dh"), keys.get("auth")
    if not isinstance(p256dh, str) or not isinstance(auth, str) or len(p256dh) > 200 or len(auth) > 100:
        raise ValueError("subscription.keys: give p256dh and auth (base64url)")
    kinds = asked.get("kinds", list(PUSH_KINDS))
    if not isinstance(kinds, list) or any(k not in PUSH_KINDS for k in kinds):
        raise ValueError(f"kinds: a list among {', '.join(PUSH_KINDS)}")
    return PushTarget(endpoint=endpoint, p256dh=p256dh, auth=auth, kinds=kinds, content=asked.get("content") is True)
