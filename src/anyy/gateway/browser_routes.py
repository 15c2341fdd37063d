"""The browser key of an open Dashboard tab (U8): given with the access token when a page trades its one-time
code, and traded at ``POST /auth/refresh`` for the access token of the Gateway running now, so a tab comes
back by itself after a Gateway restart. The key is an HttpOnly, SameSite=Strict cookie sent to that route
only; the profile keeps its digest (:mod:`anyy.profiles.browser_keys`), and ``anyy dashboard --revoke``
forgets every key."""

from __future__ import annotations

import logging
import re

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from anyy.gateway.access import Access, foreign
from anyy.profiles.browser_keys import KEY_DAYS, issue_key, known_key

REFRESH_PATH = "/auth/refresh"
log = logging.getLogger("anyy.gateway")


def cookie_name(profile: str) -> str:
    """One cookie per profile: browsers share cookies between the ports of one host."""
    return "anyy_key_" + re.sub(r"[^A-Za-z0-9_-]", "_", profile)


async def give_key(access: Access, request: Request, response: Response) -> Response:
    """Add a new browser key to the reply of a code exchange."""
    profile = access.dispatcher.gateway.profile
    key = await run_in_threadpool(issue_key, profile)
    response.set_cookie(
        cookie_name(profile.name),
        key,
        max_age=KEY_DAYS * 86400,
        path=REFRESH_PATH,
        secure=request.url.scheme == "https",
        httponly=True,
        samesite="strict",
    )
    return response


async def refresh(access: Access, request: Request) -> Response:
    """The access token, to a page of this Gateway that holds a browser key the profile knows."""
    origin = request.headers.get("origin")
    if origin is None or foreign(origin, request.scope.get("server")):
        return JSONResponse({"error": "refused: only the Dashboard page this Gateway served may ask"}, 403)
    profile = access.dispatcher.gateway.profile
    key = request.cookies.get(cookie_name(profile.name), "")
    if not await run_in_threadpool(known_key, profile, key):
        log.info("dashboard refresh refused: no browser key, or one unknown or revoked")
        return JSONResponse(
            {"error": "this browser is not known to the Gateway (or was revoked): open it with `anyy dashboard`"},
            status_code=401,
            headers={"Cache-Control": "no-store"},
        )
    return JSONResponse({"token": access.token}, headers={"Cache-Control": "no-store"})
