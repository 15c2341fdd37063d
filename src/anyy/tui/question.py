"""A clarification waiting for its answer (SPEC A2, M6): the question the agent asked with ``ask_user``,
shown above the editor while its execution is suspended (the session state's ``waiting``). The editor's
Enter then answers it (``session.answer``) instead of sending a new message.

A tool waiting for approval (N2: its question begins with ``Approval needed:``) has a prompt of its own:
``o`` (once), ``s`` (for the session) or ``d`` (deny), typed in the editor and sent with Enter, go to
``session.approve``. Either way the terminal bell rings when the prompt appears (U3)."""

from __future__ import annotations

from typing import Literal

from textual.widgets import Static

from anyy.tui.state import SessionState, Waiting

TITLE = "The agent asks"
HINT = "type your answer in the editor · Enter sends it · Ctrl+C stops the response instead"
APPROVAL_PREFIX = "Approval needed:"  # how the Gateway words a tool's request for approval (session.approve)
APPROVAL_TITLE = "Approval needed"
APPROVAL_HINT = "o + Enter: once · s + Enter: for this session · d + Enter: deny · Ctrl+C stops"
Decision = Literal["once", "session", "deny"]
DECISIONS: dict[str, Decision] = {
    "o": "once",
    "once": "once",
    "s": "session",
    "session": "session",
    "d": "deny",
    "deny": "deny",
}


def is_approval(waiting: Waiting | None) -> bool:
    return waiting is not None and waiting.question.startswith(APPROVAL_PREFIX)


def decision(text: str) -> Decision | None:
    """The approval decision typed in the editor (o, s, d or the whole word), or None."""
    return DECISIONS.get(text.strip().lower())


class QuestionPrompt(Static):
    DEFAULT_CSS = """
    QuestionPrompt {
        height: auto; max-height: 12; border: round $warning; padding: 0 1; display: none;
        border-subtitle-color: $text-muted;
    }
    QuestionPrompt.asking { display: block; }
    QuestionPrompt.approval { border: round $error; max-height: 20; }
    """

    def __init__(self, state: SessionState) -> None:
        super().__init__("", id="question", markup=False)
        self.waiting: Waiting | None = None
        state.watch("waiting", self.show)

    def show(self, waiting: Waiting | None) -> None:
        self.waiting = waiting
        if waiting is None:
            self.update("")
            self.remove_class("asking")
            return
        title, hint = (APPROVAL_TITLE, APPROVAL_HINT) if is_approval(waiting) else (TITLE, HINT)
        self.border_title, self.border_subtitle = title, hint
        self.update(
            waiting.question.removeprefix(APPROVAL_PREFIX).strip() if is_approval(waiting) else waiting.question
        )
        self.add_class("asking")
        self.set_class(is_approval(waiting), "approval")
        if self.is_attached:
            self.app.bell()  # U3: the terminal says a question waits, even when the user looks elsewhere

    def describe(self) -> str:
        if self.waiting is None:
            return ""
        if is_approval(self.waiting):
            return f"{APPROVAL_TITLE}: {self.waiting.question.removeprefix(APPROVAL_PREFIX).strip()} ({APPROVAL_HINT})"
        return f"{TITLE}: {self.waiting.question} ({HINT})"
