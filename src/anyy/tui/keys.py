"""Alt+Enter wherever the TUI runs, tmux included (SPEC Q4).

A terminal without an extended keyboard protocol (tmux's default, xterm, the Linux console) sends
Alt+Enter as ESC followed by CR. Textual reads ESC as "Alt" only for letters and digits, so it reports
such an Alt+Enter as plain Enter: a follow-up silently became steering. :func:`read_alt_enter` teaches
the terminal parser that ESC CR is Alt+Enter. Terminals that speak the kitty keyboard protocol (which
Textual asks for) say Alt+Enter in so many words and are not concerned.

Under tmux, Alt+Enter and Esc still depend on its settings: ``escape-time`` (tmux waits that long after ESC
to tell Esc from Alt+key, 500 ms by default: Esc feels slow, and with 0 an Alt+Enter can arrive as two
keys) and ``extended-keys`` (on: modified keys reach the program as they were pressed). :func:`tmux_advice`
reads them and says what to change, as a note on the first screen. Ctrl+F adds a follow-up in every
terminal, whatever its settings.
"""

from __future__ import annotations

import inspect
import os
import shutil
import subprocess
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from textual import events
from textual._xterm_parser import XTermParser

FOLLOW_UP_KEYS = frozenset({"alt+enter", "ctrl+f"})  # ctrl+f: the key that works in any terminal
ESCAPE_TIME_MAX = 50  # ms: more, and Esc waits that long; tmux's default is 500
_MARK = "_anyy_alt_enter"
_HOOK = "_sequence_to_key_events"  # XTermParser's: a sequence read from the terminal -> its key events


def read_alt_enter(parser: type[Any] = XTermParser) -> bool:
    """Make ESC CR read as Alt+Enter (once per process; Textual's parser is shared by every app). False when
    this Textual has no such hook, or one of another shape (it is private: no public Textual API maps a key
    sequence, as of Textual 8.2): nothing is changed then, and Ctrl+F still adds a follow-up."""
    original: Callable[..., Iterable[events.Key]] | None = getattr(parser, _HOOK, None)
    if original is None or not callable(original):
        return False
    if getattr(original, _MARK, False):
        return True
    if list(inspect.signature(original).parameters) != ["self", "sequence", "alt"]:
        return False

    def sequence_to_key_events(self: XTermParser, sequence: str, alt: bool = False) -> Iterable[events.Key]:
        if alt and sequence == "\r":
            return [events.Key("alt+enter", sequence)]
        return original(self, sequence, alt)

    setattr(sequence_to_key_events, _MARK, True)
    setattr(parser, _HOOK, sequence_to_key_events)
    return True


NO_ALT_ENTER = (
    "Alt+Enter may read as Enter in this terminal (this Textual cannot be taught ESC CR): "
    "Ctrl+F adds a follow-up in any terminal."
)


Run = Callable[[list[str]], str | None]


def _tmux_option(args: list[str]) -> str | None:
    tmux = shutil.which("tmux")
    if tmux is None:
        return None
    try:
        done = subprocess.run([tmux, *args], capture_output=True, text=True, timeout=2, check=False)  # noqa: S603
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def tmux_advice(environ: Mapping[str, str] | None = None, run: Run = _tmux_option) -> str | None:
    """Under tmux, what to set for Alt+Enter and Esc to work well (None when all is well, or not tmux)."""
    env = os.environ if environ is None else environ
    if not env.get("TMUX"):
        return None
    extended = run(["show-options", "-sv", "extended-keys"]) or "off"
    escape_time = _number(run(["show-options", "-sv", "escape-time"]))
    lines: list[str] = []
    if extended == "off":
        lines.append("set -s extended-keys on")
    if escape_time is None or escape_time > ESCAPE_TIME_MAX or escape_time == 0:
        lines.append("set -s escape-time 10")
    if not lines:
        return None
    return (
        f"Running in tmux ({_describe(extended, escape_time)}): for Alt+Enter (a follow-up) and Esc to work "
        f"reliably, add to ~/.tmux.conf: {'; '.join(lines)} — then run: tmux source-file ~/.tmux.conf. "
        "Ctrl+F adds a follow-up in any terminal."
    )


def _number(text: str | None) -> int | None:
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def _describe(extended: str, escape_time: Any) -> str:
    when = "unknown" if escape_time is None else f"{escape_time} ms"
    return f"extended-keys {extended}, escape-time {when}"
