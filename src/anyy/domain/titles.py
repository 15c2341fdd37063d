"""Session titles and previews (U1), as text rules with no I/O.

A session is named from its first message at once (:func:`first_title`); after the first answer the
model is asked for a better one (:data:`TITLE_INSTRUCTIONS`, its reply cleaned by :func:`model_title`).
The offline model answers that request by :func:`offline_title`, deterministically. A list shows each
session's last message cut short (:func:`preview_of`).
"""

from __future__ import annotations

import re

TITLE_CHARS = 60  # a title longer than this is cut at a word, with an ellipsis
PREVIEW_CHARS = 100  # the last message's snippet in a list of sessions
TITLE_INSTRUCTIONS = (
    "Write a short title, at most six words, for the conversation below: what the user wants, in the "
    "user's language. Write only the title, with no quotes and no final period."
)
_FILLER = re.compile(
    r"^(please|hi|hello|hey|ok|okay|so|can you|could you|would you|will you|i want you to|i would like you to)"
    r"\b[\s,:!]*",
    re.IGNORECASE,
)
_LABEL = re.compile(r"^(title|titre)\s*:\s*", re.IGNORECASE)
_OFFLINE_WORDS = 6


def _cut(text: str, limit: int) -> str:
    """``text`` on one line, cut at a word boundary to at most ``limit`` characters (an ellipsis added)."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    head = flat[: limit - 1]
    space = head.rfind(" ")
    return (head[:space] if space > limit // 2 else head).rstrip(" ,.;:") + "…"


def first_title(text: str) -> str:
    """The title a session gets from its first message: its first non-empty line, cut short."""
    line = next((line for line in text.splitlines() if line.strip()), "")
    return _cut(line, TITLE_CHARS)


def model_title(reply: str) -> str:
    """The model's title, cleaned: first line, no ``Title:`` label, quotes, Markdown marks or final period;
    empty when nothing usable is left (the first title is kept then)."""
    line = next((line for line in reply.splitlines() if line.strip()), "")
    line = _LABEL.sub("", line.strip().lstrip("#*> ").strip())
    line = line.strip("\"'`*_“”«» ").rstrip(".").strip()
    return _cut(line, TITLE_CHARS)


def offline_title(transcript: str) -> str:
    """The offline model's title for a conversation: the first user message's first words, without
    greetings or "can you", capitalised. Deterministic."""
    first = next((line for line in transcript.splitlines() if line.startswith("User: ")), "")
    words = first.removeprefix("User: ")
    while (shorter := _FILLER.sub("", words)) != words:
        words = shorter
    picked = " ".join(words.split()[:_OFFLINE_WORDS]).rstrip("?!.,;:")
    return (picked[:1].upper() + picked[1:]) if picked else "Conversation"


def title_transcript(question: str, answer: str) -> str:
    """What the model reads to name a conversation: its first exchange, each side cut to a few hundred
    characters (a title needs no more)."""
    return f"User: {_cut(question, 600)}\nAssistant: {_cut(answer, 600)}"


def preview_of(text: str) -> str:
    """A message as a list shows it under the session's title."""
    return _cut(text, PREVIEW_CHARS)
