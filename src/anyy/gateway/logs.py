"""The Gateway's log: JSON lines in ``PROFILE/logs/gateway.log``, bounded in size and in rate, with no
secret in it (issue 17: D2, D5).

- **Size**: the file rotates at :data:`MAX_BYTES` and keeps :data:`BACKUPS` older files, so a flood can
  never fill the disk.
- **Rate**: a message (by its logger and its unformatted text) is written at most :data:`BURST` times per
  :data:`WINDOW` seconds; the rest are counted and reported in one line when the window ends (an exhausted
  file-descriptor table once made asyncio log the same error thousands of times a second).
- **Secrets**: access tokens and one-time codes are redacted from every line, whoever logged it (uvicorn
  logs each WebSocket's path with its query string, ``/ws?token=…``).
"""

from __future__ import annotations

import json
import logging
import logging.handlers
import re
import threading
import time
from pathlib import Path
from typing import Any

LOG_FILE = "logs/gateway.log"
MAX_BYTES = 5 * 1024 * 1024
BACKUPS = 3
BURST = 20
WINDOW = 10.0

_SECRET = re.compile(r"((?:token|code)=)[^&\s\"'#]+", re.IGNORECASE)
_BEARER = re.compile(r"(bearer\s+)[A-Za-z0-9._~+/=-]+", re.IGNORECASE)


def redact(text: str) -> str:
    """The text without the values of ``token=``/``code=`` parameters or bearer credentials."""
    return _BEARER.sub(r"\1[redacted]", _SECRET.sub(r"\1[redacted]", text))


class JsonLines(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": round(record.created, 3),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": redact(record.getMessage()),
        }
        if record.exc_info:
            line["exception"] = redact(self.formatException(record.exc_info))
        return json.dumps(line, ensure_ascii=False)


class RateLimit(logging.Filter):
    """At most ``burst`` records of one kind per ``window`` seconds; the rest are counted, then reported."""

    def __init__(self, burst: int = BURST, window: float = WINDOW, clock: Any = time.monotonic) -> None:
        super().__init__()
        self.burst = burst
        self.window = window
        self.clock = clock
        self._lock = threading.Lock()
        self._seen: dict[tuple[str, str], list[float]] = {}  # kind -> [window start, count, dropped]

    def filter(self, record: logging.LogRecord) -> bool:
        kind = (record.name, str(record.msg))
        now = self.clock()
        with self._lock:
            state = self._seen.get(kind)
            if state is None or now - state[0] >= self.window:
                dropped = int(state[2]) if state is not None else 0
                self._seen[kind] = [now, 1.0, 0.0]
                if len(self._seen) > 1000:  # forget old kinds: the table stays small
                    for key in [k for k, v in self._seen.items() if now - v[0] >= self.window]:
                        del self._seen[key]
                if dropped:
                    record.msg = f"{record.msg} (and {dropped} more like it in the previous {self.window:g} s)"
                return True
            state[1] += 1
            if state[1] <= self.burst:
                return True
            state[2] += 1
            return False


def setup_logging(profile_path: Path) -> logging.Handler:
    """Send every log record of the process to the profile's rotating, rate-limited, redacted log."""
    path = profile_path / LOG_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    handler = logging.handlers.RotatingFileHandler(path, maxBytes=MAX_BYTES, backupCount=BACKUPS, encoding="utf-8")
    handler.setFormatter(JsonLines())
    handler.addFilter(RateLimit())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.INFO)
    for noisy in ("uvicorn.access",):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    return handler
