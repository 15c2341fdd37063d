"""Residents' webhooks (K3): ``POST /hooks/NAME`` with the resident's own secret
(``Authorization: Bearer SECRET``, not the Gateway's token); the body (UTF-8, at most 64 KiB) becomes a
follow-up of the resident's session. A wrong secret is 401, a body too large 413, and neither records
anything; 202 with the submission's id when accepted."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from anyy.domain.errors import StorageFull
from anyy.domain.residents import MAX_HOOK_BYTES
from anyy.gateway.dispatcher import Dispatcher
from anyy.runtime.residents import HookRefused


def hook_route(dispatcher: Dispatcher) -> Callable[[Request], Awaitable[Response]]:
    async def hook(request: Request) -> Response:
        name = request.path_params["name"]
        declared = int(request.headers.get("content-length") or 0)
        if declared > MAX_HOOK_BYTES:
            return _too_large(declared)
        presented = _secret(request.headers.get("authorization", ""))
        body = b""
        async for chunk in request.stream():
            body += chunk
            if len(body) > MAX_HOOK_BYTES:
                return _too_large(len(body))
        try:
            submission = await dispatcher.gateway.runtime.residents.hook(name, presented, body)
        except HookRefused as refused:
            return JSONResponse({"error": str(refused)}, status_code=refused.status)
        except StorageFull as exc:
            return JSONResponse({"error": str(exc)}, status_code=507)
        return JSONResponse({"submission_id": submission.id, "session_id": submission.session_id}, status_code=202)

    return hook


def _secret(header: str) -> str:
    scheme, _, value = header.partition(" ")
    return value.strip() if scheme.lower() == "bearer" else ""


def _too_large(size: int) -> Response:
    limit = f"at most {MAX_HOOK_BYTES >> 10} KiB"
    return JSONResponse({"error": f"the body is too large ({size} bytes or more): {limit}"}, status_code=413)
