"""Every configured hook with its standing (trusted, untrusted, changed, missing): what ``anyy hooks
list`` prints and ``gateway.status`` reports (SPEC N6). Reads the hooks' files: call it off the event loop."""

from __future__ import annotations

from pathlib import Path

import msgspec

from anyy.hooks.settings import EVENTS, TOOL_EVENTS, HookEvent, HooksSettings, argv, label
from anyy.hooks.trust import Fingerprint, Standing, judge, read_trusted


class HookLine(msgspec.Struct, kw_only=True):
    event: HookEvent
    name: str
    command: list[str]
    matcher: str
    timeout: float
    standing: Standing
    reason: str  # why it does not run, and what to do; "" when trusted
    fingerprint: Fingerprint

    def note(self) -> str:
        """One line for people, for a hook that does not run."""
        return f"the {self.event} hook {self.name} is not run: {self.reason}"


def survey(settings: HooksSettings, trust_path: Path) -> list[HookLine]:
    trusted = read_trusted(trust_path)
    lines = []
    for event in EVENTS:
        for hook in settings.of(event):
            words = argv(hook)
            verdict = judge(words, trusted)
            lines.append(
                HookLine(
                    event=event,
                    name=label(hook),
                    command=words,
                    matcher=hook.matcher if event in TOOL_EVENTS else "",
                    timeout=hook.timeout,
                    standing=verdict.standing,
                    reason=verdict.reason,
                    fingerprint=verdict.fingerprint,
                )
            )
    return lines
