"""One-time codes that open the Dashboard without putting the access token where others can read it
(issue 17, D5): ``anyy dashboard`` asks the Gateway for a code (``dashboard.code``, with the token) and
hands the browser ``/#code=…``; the page trades the code for the token once (``POST /auth/exchange``).
A code works once, for :data:`CODE_SECONDS`; one seen in ``ps`` or a shell history afterwards opens nothing.
"""

from __future__ import annotations

import collections
import secrets
import time
from collections.abc import Callable

CODE_SECONDS = 120.0
MAX_CODES = 64  # outstanding at once; the oldest goes first


class CodeBook:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._codes: collections.OrderedDict[str, float] = collections.OrderedDict()  # code -> expiry

    def issue(self, seconds: float = CODE_SECONDS) -> str:
        code = secrets.token_urlsafe(24)
        self._codes[code] = self.clock() + seconds
        while len(self._codes) > MAX_CODES:
            self._codes.popitem(last=False)
        return code

    def redeem(self, code: str) -> bool:
        """True once for a code issued here and not yet expired; it is spent either way."""
        expiry = self._codes.pop(code, None)
        return expiry is not None and self.clock() <= expiry
