"""The Web Push routes of a paired device (O3): ``GET /push/key`` (the profile's VAPID public key, for the
browser's ``pushManager.subscribe``) and ``POST /push/subscribe`` (the subscription the browser made, the
kinds of message it wants, and whether they may carry the conversation's text). Only a device's cookie
subscribes: the push goes to that device, and stops when it is revoked.

The Gateway sends each push itself, to the endpoint the device gave: an endpoint is taken only on a push
service (the browsers' own, or one the profile names in ``[gateway] push_hosts``), never any address a
device (or a script on a page it opened) chooses, so pushes cannot be turned into requests to the user's
own network."""

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
# The push services of the browsers that take Web Push: Chrome and Android (FCM), Firefox (autopush),
# Safari (Apple's), Edge (WNS). A host matches itself and its subdomains.
BROWSER_PUSH_SERVICES = ("fcm.googleapis.com", "push.services.mozilla.com", "push.apple.com", "notify.windows.com")


class PushRoutes:
    def __init__(self, access: Access, caller_of: object, *, push_hosts: list[str] | None = None) -> None:
        self.access = access
        self.caller_of = caller_of  # HttpRoutes._caller: the same authentication and Origin rules
        self.push_hosts = (*BROWSER_PUSH_SERVICES, *(push_hosts or []))

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
            target = _target(json.loads(body or b"null"), self.push_hosts)
        except ValueError as exc:
            return JSONResponse({"error": str(exc)}, 400)
        remote.book.set_push(caller.device.id, target)
        device = caller.device
        kinds = ", ".join(target.kinds) if target is not None else "nothing"
        log.info("device %r (%s) takes pushes for %s", device.name, device.id, kinds)
        return JSONResponse(
            {"kinds": target.kinds if target is not None else [], "content": bool(target and target.content)}
        )


def _on_a_push_service(host: str, services: tuple[str, ...]) -> bool:
    host = host.lower().rstrip(".")
    return any(host == s.lower().lstrip(".") or host.endswith("." + s.lower().lstrip(".")) for s in services)


def _target(asked: object, services: tuple[str, ...]) -> PushTarget | None:
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
    if not _on_a_push_service(parts.hostname, services):
        raise ValueError(
            f"subscription.endpoint: {parts.hostname} is not a known push service; the profile's owner can add "
            "it to [gateway] push_hosts in config.toml (a self-hosted push service)"
        )
    p256dh, auth = keys.get("p256dh"), keys.get("auth")
    if not isinstance(p256dh, str) or not isinstance(auth, str) or len(p256dh) > 200 or len(auth) > 100:
        raise ValueError("subscription.keys: give p256dh and auth (base64url)")
    kinds = asked.get("kinds", list(PUSH_KINDS))
    if not isinstance(kinds, list) or any(k not in PUSH_KINDS for k in kinds):
        raise ValueError(f"kinds: a list among {', '.join(PUSH_KINDS)}")
    return PushTarget(endpoint=endpoint, p256dh=p256dh, auth=auth, kinds=kinds, content=asked.get("content") is True)
