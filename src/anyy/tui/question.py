"""A clarification waiting for its answer (SPEC A2, M6): the question the agent asked with ``ask_user``,
shown above the editor while its execution is suspended. The editor's Enter then answers it
(``session.answer``) instead of sending a new message; the app hides it when the execution goes on."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from textual.widgets import Static

TITLE = "The agent asks"
HINT = "type your answer in the editor · Enter sends it · Ctrl+C stops the execution instead"


@dataclass(frozen=True)
class Waiting:
    """What ``session.get`` calls ``waiting_question``."""

    execution_id: str
    entry_id: int
    question: str

    @classmethod
    def parse(cls, value: Any) -> Waiting | None:
        if not isinstance(value, dict):
            return None
        return cls(str(value["execution_id"]), int(value["entry_id"]), str(value.get("question", "")))


class QuestionPrompt(Static):
    DEFAULT_CSS = """
    QuestionPrompt {
        height: auto; max-height: 12; border: round $warning; padding: 0 1; display: none;
        border-subtitle-color: $text-muted;
    }
    QuestionPrompt.asking { display: block; }
    """

    def __init__(self) -> None:
        super().__init__("", id="question", markup=False)
        self.waiting: Waiting | None = None

    def ask(self, waiting: Waiting) -> None:
        self.waiting = waiting
        self.border_title, self.border_subtitle = TITLE, HINT
        self.update(waiting.question)
        self.add_class("asking")

    def clear(self) -> None:
        self.waiting = None
        self.update("")
        self.remove_class("asking")

    def describe(self) -> str:
        return f"{TITLE}: {self.waiting.question} ({HINT})" if self.waiting is not None else ""
