"""Web Push to paired devices (O3): when a question or an approval waits, or a run fails, each device that
subscribed is told, through its browser's push service, encrypted for that browser (RFC 8291) and signed
with the profile's VAPID key (RFC 8292). A message holds a title and the session's name, and the
conversation's text only when the device asked for it.

``pywebpush`` (and ``cryptography``) are imported when the first push is sent, in a worker thread. A push
service that says the subscription is gone (404, 410) has it dropped.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from anyy.api.devices import Device
from anyy.api.events import ExecutionStateChanged, RuntimeEvent
from anyy.gateway.state import Gateway
from anyy.profiles.devices import PushTarget
from anyy.profiles.profile import Profile

log = logging.getLogger("anyy.gateway")

PUSH_DIR = "push"
VAPID_FILE = "vapid.pem"
SEND_TIMEOUT = 10.0
TITLES = {
    "question": "A question is waiting",
    "approval": "An approval is waiting",
    "failed": "A run failed",
    "finished": "A long turn ended",
}
LONG_TURN = 120.0  # seconds: a turn that ends after this long, while no client watches its session, is told


class Turns:
    """When executions started running, to tell a long turn that ended while nobody watched (O3)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.started: dict[str, float] = {}

    def kind(self, event: RuntimeEvent, watched: Callable[[str], bool]) -> str | None:
        """What to push for this event, if anything; ``watched(session_id)``: a client follows it now."""
        found = kind_of(event)
        if not isinstance(event, ExecutionStateChanged):
            return found
        if event.state in ("running", "retry_wait"):
            self.started.setdefault(event.execution_id, self.clock())
            return found
        began = self.started.pop(event.execution_id, None)
        if found is not None or event.state != "completed" or began is None:
            return found
        long = self.clock() - began >= LONG_TURN
        return "finished" if long and not watched(event.session_id) else None


def vapid_path(profile: Profile) -> Path:
    """The profile's VAPID key (P-256, PEM, mode 0600), made once."""
    directory = profile.path / PUSH_DIR
    directory.mkdir(mode=0o700, exist_ok=True)
    path = directory / VAPID_FILE
    if not path.exists():
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import ec

        pem = ec.generate_private_key(ec.SECP256R1()).private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.write(fd, pem)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    return path


def application_server_key(profile: Profile) -> str:
    """The VAPID public key as a browser's ``pushManager.subscribe`` wants it (base64url, uncompressed)."""
    from cryptography.hazmat.primitives import serialization

    key = serialization.load_pem_private_key(vapid_path(profile).read_bytes(), password=None)
    raw = key.public_key().public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def kind_of(event: RuntimeEvent) -> str | None:
    """What a device is told about, if anything: a question or an approval waits, or a run failed."""
    if not isinstance(event, ExecutionStateChanged):
        return None
    if event.state == "suspended":
        return "question" if event.question is not None else "approval"
    if event.state == "failed":
        return "failed"
    return None


def message(kind: str, event: ExecutionStateChanged, session_name: str, content: bool) -> dict[str, Any]:
    """The push's JSON: a title, the session's name, where a tap opens; the text only if allowed."""
    body: dict[str, Any] = {
        "kind": kind,
        "title": TITLES[kind],
        "session": session_name,
        "session_id": event.session_id,
        "url": f"/#session={event.session_id}",
    }
    if content:
        body["text"] = event.question.text if event.question is not None else (event.error or event.note or "")
    return body


def _send(target: PushTarget, data: str, key_path: str) -> int:
    """One push, in a worker thread: the push service's status (201 when taken)."""
    from pywebpush import WebPushException, webpush  # type: ignore[import-untyped]

    try:
        reply: Any = webpush(
            {"endpoint": target.endpoint, "keys": {"p256dh": target.p256dh, "auth": target.auth}},
            data=data,
            vapid_private_key=key_path,
            vapid_claims={"sub": "mailto:anyy@localhost"},
            timeout=SEND_TIMEOUT,
            ttl=3600,
        )
        return int(reply.status_code)
    except WebPushException as exc:
        return int(exc.response.status_code) if exc.response is not None else 0
    except Exception as exc:  # the push service unreachable: a push is best effort
        log.warning("push failed: %s", type(exc).__name__)
        return 0


async def _session_name(gw: Gateway, session_id: str) -> str:
    try:
        found = await gw.store(lambda s: s.get_session(session_id))
    except Exception:
        return session_id
    return str(getattr(found, "title", "") or session_id)


async def deliver(gw: Gateway, event: ExecutionStateChanged, kind: str) -> None:
    remote = gw.remote
    if remote is None:
        return
    targets: list[tuple[Device, PushTarget]] = remote.book.push_targets(kind)
    if not targets:
        return
    name = await _session_name(gw, event.session_id)
    key_path = str(vapid_path(gw.profile))
    for device, target in targets:
        data = json.dumps(message(kind, event, name, target.content))
        status = await asyncio.to_thread(_send, target, data, key_path)
        if status in (404, 410):
            remote.book.set_push(device.id, None)
            log.info("push subscription of device %r (%s) is gone: dropped", device.name, device.id)
        elif not 200 <= status < 300:
            log.warning("push to device %r (%s) refused (status %d)", device.name, device.id, status)
        else:
            log.info("pushed %s to device %r (%s)", kind, device.name, device.id)


async def push_loop(gw: Gateway) -> None:
    """Follow every session's events for the Gateway's life and push what waits (O3)."""
    subscription = gw.deps.bus.subscribe(None, states_only=True)  # no text deltas built for it
    turns = Turns()
    try:
        while True:
            event = await subscription.get()
            kind = turns.kind(event, gw.deps.bus.listened)
            if kind is not None and isinstance(event, ExecutionStateChanged):
                try:
                    await deliver(gw, event, kind)
                except Exception:
                    log.exception("push of %s failed", kind)
    finally:
        subscription.close()
