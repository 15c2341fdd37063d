"""Answers computed from the conversation a real harness sends, for the end-to-end tests of ameesh.

Whatever the API (Anthropic Messages, OpenAI Responses, Chat Completions), the user prompts of the
request are read in order — leaving out what the harness adds itself (blocks that start with ``<``, such
as Claude Code's ``<system-reminder>`` or Codex's ``<environment_context>``, and DeepSeek Harness's
``Current runtime context. …`` snapshots) — and the answer says what it received:

- ``ANSWER n: «last prompt» · first: «first prompt»``, n being how many prompts the request carries: a
  resumed session answers with n > 1 and names its first turn;
- ``SUMMARY: …`` for ameesh's request of a resume summary (the earlier prompts, in order);
- a prompt containing ``HOLD`` is, the first time it comes, answered only when the reply's ``hold`` flag is
  set (the server sets it when it stops): a turn still running when its runner is killed; when the same
  prompt comes again (the turn played again), it is answered at once.

The usage reports ``tokens_per_prompt`` input tokens per prompt carried, so the context a harness re-reads
grows by a known amount each turn (rotation thresholds in the tests are set from it).
"""

from __future__ import annotations

from typing import Any

from tests.fakes.model_server import Received
from tests.fakes.wire import Reply

SUMMARY_CUE = "resume summary for your successor"
HARNESS_NOTES = ("<", "Current runtime context.")  # what harnesses add to the user's turns themselves


def _texts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        return []
    return [
        str(part.get("text") or "")
        for part in content
        if isinstance(part, dict) and part.get("type") in {"text", "input_text"}
    ]


def user_prompts(body: dict[str, Any]) -> list[str]:
    """The user's prompts in a request body of any of the three APIs, oldest first."""
    items = body.get("messages") if isinstance(body.get("messages"), list) else body.get("input")
    if isinstance(items, str):
        return [items]
    prompts: list[str] = []
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, dict) or item.get("role") != "user":
            continue
        prompts += [
            t.strip() for t in _texts(item.get("content")) if t.strip() and not t.strip().startswith(HARNESS_NOTES)
        ]
    return prompts


class ConversationResponder:
    """The fake model server's responder for the harness tests (see the module's docstring)."""

    def __init__(self, tokens_per_prompt: int = 1000) -> None:
        self.tokens_per_prompt = tokens_per_prompt
        self.held: set[str] = set()

    def __call__(self, received: Received) -> Reply:
        prompts = user_prompts(received.body)
        last = prompts[-1] if prompts else ""
        if SUMMARY_CUE in last:
            text = "SUMMARY: " + " | ".join(p.splitlines()[0][:80] for p in prompts[:-1])
        else:
            text = f"ANSWER {len(prompts)}: «{last[:200]}» · first: «{prompts[0][:200] if prompts else ''}»"
        reply = Reply(text=[text], input_tokens=self.tokens_per_prompt * max(1, len(prompts)), output_tokens=20)
        if "HOLD" in last and last not in self.held:
            self.held.add(last)
            reply.hold_at = 1
        return reply
