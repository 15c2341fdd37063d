"""A clarification waiting for its answer (SPEC A2, M6): the question the agent asked with ``ask_user``,
shown above the editor while its execution is suspended (the session state's ``waiting``). The editor's
Enter then answers it (``session.answer``) instead of sending a new message."""

from __future__ import annotations

from textual.widgets import Static

from anyy.tui.state import SessionState, Waiting

TITLE = "The agent asks"
HINT = "type your answer in the editor · Enter sends it · Ctrl+C stops the execution instead"


class QuestionPrompt(Static):
    DEFAULT_CSS = """
    QuestionPrompt {
        height: auto; max-height: 12; border: round $warning; padding: 0 1; display: none;
        border-subtitle-color: $text-muted;
    }
    QuestionPrompt.asking { display: block; }
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
        self.border_title, self.border_subtitle = TITLE, HINT
        self.update(waiting.question)
        self.add_class("asking")

    def describe(self) -> str:
        return f"{TITLE}: {self.waiting.question} ({HINT})" if self.waiting is not None else ""
