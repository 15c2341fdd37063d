"""The user's hooks in the runtime (SPEC N6): which run when, and what their answers do.

- ``pre_tool`` runs before each tool call whose name its ``matcher`` matches (a Codemode script's calls
  too), before the call is recorded as running. Its answer combines with the approval rules
  (:func:`decide`): a hook's **deny** always wins; a hook's **allow** answers a rule's ``ask`` (the call runs
  without asking) but never overrides a rule's ``deny``; a hook's **ask** makes the call wait for the
  user's approval like a rule's ``ask`` (a rule's ``deny`` still wins, an approval "for the session" of the
  same call still holds). Fail closed: a hook that fails (a crash, a timeout, unreadable output) denies
  the call; one that cannot run (not trusted, changed since trusted, missing) makes it ask.
- ``post_tool`` runs after a call that ran; its ``context`` is added to the result the model reads.
- ``session_start`` (a session's first execution) and ``submission`` (each message an execution takes:
  the one that started it, steering taken at a checkpoint) run before the next model call; their
  ``context`` joins that execution's system prompt. A submission hook's ``deny`` ends the execution before
  the model sees the message (failed, with the hook's reason); the message itself stays recorded.
- ``execution_end`` runs, in the background, each time an execution stops running (completed, failed,
  interrupted, timed out, suspended); its answer is not used.

Whatever does not go as planned (a hook not run, a failure) is said to the user as a notice.
"""

from __future__ import annotations

import asyncio
import fnmatch
import json
import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from anyy.hooks.runner import Answer, local_file_in, run_hook
from anyy.hooks.settings import TOOL_EVENTS, HookEvent, HookSettings, HooksSettings, argv, label
from anyy.hooks.survey import survey
from anyy.hooks.trust import judge, read_trusted
from anyy.tools.approval_rules import grant_key, subject
from anyy.tools.approvals import QUESTION_PREFIX
from anyy.tools.base import ToolOutcome

log = logging.getLogger("anyy.hooks")


@dataclass(frozen=True)
class HookResult:
    """One hook's part: ``answered`` (with its answer), ``failed`` or ``not_run`` (with why)."""

    name: str
    status: str
    answer: Answer = field(default_factory=Answer)
    problem: str = ""


@dataclass
class Verdict:
    """What the hooks of one event said, together."""

    decision: str | None = None  # "allow", "deny", "ask" or None (no opinion)
    reason: str = ""  # for the model (deny) and the user (ask)
    context: list[str] = field(default_factory=list)  # "hook NAME: text", for the model
    notes: list[str] = field(default_factory=list)  # for the user: hooks that failed or did not run


class UserHooks:
    def __init__(self, settings: HooksSettings, *, profile: str, trust_path: Path) -> None:
        self.settings = settings
        self.profile = profile
        self.trust_path = trust_path
        self._background: set[asyncio.Task[None]] = set()

    def configure(self, settings: HooksSettings) -> None:
        """config.toml re-read (R1): the next event uses these."""
        self.settings = settings

    def matching(self, event: HookEvent, tool: str = "") -> list[HookSettings]:
        hooks = self.settings.of(event)
        if event in TOOL_EVENTS:
            return [hook for hook in hooks if fnmatch.fnmatchcase(tool, hook.matcher)]
        return list(hooks)

    def notes(self) -> list[str]:
        """Hooks that do not run now, and why (gateway.status); reads their files (off the loop)."""
        return [line.note() for line in survey(self.settings, self.trust_path) if line.standing != "trusted"]

    async def run(self, event: HookEvent, payload: Mapping[str, Any], *, workdir: Path, tool: str = "") -> Verdict:
        """Run the event's matching hooks (at once) and combine what they said."""
        hooks = self.matching(event, tool)
        if not hooks:
            return Verdict()
        results = await asyncio.gather(*(self._one(event, hook, payload, workdir) for hook in hooks))
        return _combine(event, results)

    def later(self, event: HookEvent, payload: Mapping[str, Any], *, workdir: Path) -> None:
        """Run the event's hooks in the background (``execution_end``): nobody waits for them."""
        if not self.matching(event):
            return

        async def background() -> None:
            verdict = await self.run(event, payload, workdir=workdir)
            for note in verdict.notes:
                log.warning("%s", note)

        task = asyncio.create_task(background())
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def aclose(self) -> None:
        """Wait for the background hooks (each bounded by its timeout)."""
        if self._background:
            await asyncio.gather(*list(self._background), return_exceptions=True)

    async def _one(self, event: HookEvent, hook: HookSettings, payload: Mapping[str, Any], workdir: Path) -> HookResult:
        words, name = argv(hook), label(hook)
        verdict = await asyncio.to_thread(lambda: judge(words, read_trusted(self.trust_path)))
        local = local_file_in(words, workdir) if verdict.standing == "trusted" else None
        if verdict.standing != "trusted" or local is not None:
            problem = verdict.reason or (
                f"its argument {local!r} names a file in the working directory, which the agent can change: give "
                "its absolute path"
            )
            log.warning("the %s hook %s was not run: %s", event, name, problem)
            return HookResult(name=name, status="not_run", problem=problem)
        body = {"event": event, "profile": self.profile, "workdir": str(workdir), "hook": name, **payload}
        data = json.dumps(body, ensure_ascii=False, default=str).encode()
        env = {**os.environ, "ANYY_HOOK_EVENT": event, "ANYY_PROFILE": self.profile, "ANYY_WORKDIR": str(workdir)}
        ran = await run_hook(words, data, cwd=workdir, timeout=hook.timeout, env=env)
        if not ran.ok:
            log.warning("the %s hook %s failed: %s", event, name, ran.problem)
            return HookResult(name=name, status="failed", problem=ran.problem)
        return HookResult(name=name, status="answered", answer=ran.answer)


def _combine(event: HookEvent, results: Sequence[HookResult]) -> Verdict:
    verdict = Verdict()
    denials: list[str] = []
    asks: list[str] = []
    allowed = False
    guarding = event == "pre_tool"  # fail closed before a tool call; elsewhere a failure is only said
    for result in results:
        if result.status == "not_run":
            verdict.notes.append(f"The {event} hook {result.name} was not run: {result.problem}.")
            if guarding:
                asks.append(f"the hook {result.name} could not check it ({result.problem})")
            continue
        if result.status == "failed":
            verdict.notes.append(f"The {event} hook {result.name} failed: {result.problem}.")
            if guarding:
                denials.append(f"the hook {result.name} failed ({result.problem}), so the call is blocked")
            continue
        answer = result.answer
        if answer.context:
            verdict.context.append(f"hook {result.name}: {answer.context}")
        if answer.decision == "deny":
            denials.append(f"the hook {result.name} denied it: {answer.reason or 'no reason given'}")
        elif answer.decision == "ask":
            asks.append(f"the hook {result.name} asks: {answer.reason or 'no reason given'}")
        elif answer.decision == "allow":
            allowed = True
    if denials:
        verdict.decision, verdict.reason = "deny", "; ".join(denials)
    elif asks:
        verdict.decision, verdict.reason = "ask", "; ".join(asks)
    elif allowed:
        verdict.decision = "allow"
    return verdict


def decide(
    verdict: Verdict,
    gated: ToolOutcome | None,
    name: str,
    arguments: Mapping[str, Any],
    *,
    granted: set[str],
    can_wait: bool = True,
) -> ToolOutcome | None:
    """The pre_tool hooks' verdict combined with the approval rules' outcome (``gated``: None when the
    rules let the call run): None when it runs, else the outcome it gets instead."""
    if verdict.decision == "deny":
        return ToolOutcome(
            text=f"Denied by the user's hooks: {verdict.reason}. Do not retry it; find another way or ask the user.",
            is_error=True,
        )
    if gated is not None and gated.suspend is None:  # a rule's deny (or a script that cannot wait) stands
        return gated
    if verdict.decision == "allow":
        return None  # answers a rule's ask
    if verdict.decision != "ask":
        return gated
    if gated is not None:  # the rule asks too: the question says why the hook asks
        return ToolOutcome(text="", suspend=f"{gated.suspend} Also: {verdict.reason}.")
    if grant_key(name, arguments) in granted:
        return None
    shown = subject(name, arguments)
    shown = shown if len(shown) <= 500 else shown[:500] + "…"
    if not can_wait:
        return ToolOutcome(
            text=f"{name} needs the user's approval ({verdict.reason}), which a script cannot wait for: end the "
            f"script and call {name} directly.",
            is_error=True,
        )
    return ToolOutcome(
        text="",
        suspend=f"{QUESTION_PREFIX} {name} {shown!r}: {verdict.reason}. Answer once (run it this time), session "
        "(allow this for the rest of the session) or deny, with the RPC session.approve.",
    )


def with_context(outcome: ToolOutcome, context: Sequence[str]) -> ToolOutcome:
    """The result the model reads, with what the hooks added."""
    if not context:
        return outcome
    added = "\n".join(f"[{line}]" for line in context)
    return ToolOutcome(
        text=f"{outcome.text}\n\n{added}" if outcome.text else added,
        is_error=outcome.is_error,
        suspend=outcome.suspend,
        waits=outcome.waits,
    )


def system_with_context(system: str, context: Sequence[str]) -> str:
    if not context:
        return system
    lines = "\n".join(f"- {line}" for line in context)
    return f"{system}\n\nContext from the user's hooks for this response:\n{lines}"
