"""Codemode, inside the script's process: runs the model's script with a ``tools`` object.

Started by :mod:`anyy.tools.codemode` as ``python -I -u codemode_bootstrap.py REQUEST_FD``. It uses the
standard library only (``-I`` keeps the user's site and PYTHON* variables out) and never imports anyy.

The protocol is JSON, one object per line:

- anyy -> script, on stdin: first ``{"script": str, "tools": [name, ...]}``, then one reply per call,
  ``{"id": int, "text": str, "is_error": bool}``;
- script -> anyy, on REQUEST_FD: ``{"id": int, "name": str, "arguments": {...}}``.

Standard output and error stay the script's own: they are what anyy shows as the script's output. Standard
input is swapped for /dev/null once the first line is read, so that neither the script nor a program it
starts can read (or steal) the replies.
"""

from __future__ import annotations

import json
import linecache
import os
import sys
import threading
import traceback
from typing import IO, Any

SCRIPT_NAME = "<script>"


class ToolError(Exception):
    """A tool call that failed; the message is the tool's error text."""


class Tools:
    """``tools.NAME(**arguments)`` calls a tool of the session and returns its text."""

    def __init__(self, names: list[str], requests: IO[str], replies: IO[str]) -> None:
        self._names = names
        self._requests = requests
        self._replies = replies
        self._lock = threading.Lock()  # one call on the pipe at a time, even from threads
        self._last_id = 0

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)

        def call(**arguments: Any) -> str:
            return self.call(name, **arguments)

        call.__name__ = name
        return call

    def __dir__(self) -> list[str]:
        return [*self._names, "call"]

    def call(self, name: str, /, **arguments: Any) -> str:
        """Run tool ``name``; its text, or :class:`ToolError` with the tool's error text."""
        with self._lock:
            self._last_id += 1
            try:
                line = json.dumps({"id": self._last_id, "name": name, "arguments": arguments})
            except (TypeError, ValueError) as error:
                raise TypeError(f"the arguments of tools.{name} must be JSON values: {error}") from None
            self._requests.write(line + "\n")
            self._requests.flush()
            answer = self._replies.readline()
        if not answer:
            raise SystemExit("anyy stopped answering tool calls")
        reply = json.loads(answer)
        if reply["is_error"]:
            raise ToolError(reply["text"])
        return str(reply["text"])


def main() -> int:
    request_fd = int(sys.argv[1])
    os.set_inheritable(request_fd, False)  # programs the script starts must not write on the channel
    replies = os.fdopen(os.dup(0), "r", encoding="utf-8")  # os.dup makes a non-inheritable copy
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    requests = os.fdopen(request_fd, "w", encoding="utf-8")
    setup = json.loads(replies.readline())
    tools = Tools(list(setup["tools"]), requests, replies)
    namespace = {"__name__": "__main__", "tools": tools, "ToolError": ToolError}
    source = setup["script"]
    # Tracebacks then quote the script's own lines, as they would for a file.
    linecache.cache[SCRIPT_NAME] = (len(source), None, source.splitlines(keepends=True), SCRIPT_NAME)
    try:
        code = compile(source, SCRIPT_NAME, "exec")
    except SyntaxError:
        traceback.print_exc(limit=0)
        return 1
    try:
        exec(code, namespace)  # noqa: S102 - running the model's script is what Codemode is
    except Exception as error:  # SystemExit passes: sys.exit() in a script ends it as usual
        report = traceback.TracebackException.from_exception(error)
        # The bootstrap's own frames (exec, tools.call) are noise to the model reading the traceback.
        report.stack = traceback.StackSummary.from_list([f for f in report.stack if f.filename != __file__])
        print("".join(report.format()), end="", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
