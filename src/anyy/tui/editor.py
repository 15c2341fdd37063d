"""The multi-line editor: Enter sends (or queues steering while busy, or answers the agent's question),
Alt+Enter or Ctrl+F a follow-up, Shift+Enter or Ctrl+J a new line, Tab completes a ``/`` command being
typed (else moves to the tool activity). PageUp / PageDown scroll the conversation. (Under tmux, see
:mod:`anyy.tui.keys`.)"""

from __future__ import annotations

from typing import ClassVar

from textual import events
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.widgets import TextArea

from anyy.tui.completion import complete
from anyy.tui.keys import FOLLOW_UP_KEYS

NEWLINE_KEYS = frozenset({"shift+enter", "ctrl+j"})


class Editor(TextArea):
    DEFAULT_CSS = "Editor { height: auto; min-height: 3; max-height: 12; }"
    # In place of the TextArea's own (a cursor page in a box of a few lines): the conversation's pages.
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("pageup", "app.conversation_page('up')", "Older messages", show=False),
        Binding("pagedown", "app.conversation_page('down')", "Newer messages", show=False),
    ]

    class Submitted(Message):
        """The user asked to send the editor's text: ``follow_up`` for Alt+Enter."""

        def __init__(self, text: str, *, follow_up: bool) -> None:
            super().__init__()
            self.text = text
            self.follow_up = follow_up

    def __init__(self, commands: dict[str, str] | None = None) -> None:
        super().__init__(id="editor", soft_wrap=True, show_line_numbers=False, tab_behavior="focus")
        self.commands = commands or {}

    async def _on_key(self, event: events.Key) -> None:
        # Handled here, before TextArea's own handler (which would insert a newline for Enter).
        if event.key == "enter" or event.key in FOLLOW_UP_KEYS:
            event.stop()
            event.prevent_default()
            self.post_message(self.Submitted(self.text, follow_up=event.key in FOLLOW_UP_KEYS))
        elif event.key == "tab" and (completed := complete(self.text, self.commands)) is not None:
            event.stop()
            event.prevent_default()
            self.set_draft(completed)
        elif event.key in NEWLINE_KEYS:
            event.stop()
            event.prevent_default()
            start, end = self.selection
            self.replace("\n", start, end, maintain_selection_offset=False)

    def set_draft(self, text: str) -> None:
        """Replace the text and put the cursor at its end."""
        self.load_text(text)
        self.move_cursor(self.document.end)
