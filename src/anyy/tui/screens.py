"""The TUI's modal screens: help, the session picker, the tree, small choice lists and a confirmation.

Each takes Esc first (SPEC S5): Esc closes the screen and nothing else happens. Screens that read the
Gateway get the app's ``call`` (a coroutine function: method, params -> result) and nothing more.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, OptionList, Static, Tab, Tabs
from textual.widgets.option_list import Option

from anyy.api import methods as m
from anyy.api.params import ListParams, NoParams, SearchParams, SessionRef
from anyy.api.residents import Resident
from anyy.api.schedules import ScheduleRunsParams
from anyy.api.sessions import SearchHit, Session, SessionKind, TreeNode, TreeView
from anyy.tui.background import background_lines, run_label, session_label_parent, task_label

Call = Callable[..., Awaitable[Any]]

PICKER_PAGE = 20
MORE = "__more__"
BOX_CSS = """
{name} {{ align: center middle; }}
{name} > Vertical {{
    width: 90%; height: auto; max-height: 90%; border: round $accent; background: $surface; padding: 0 1;
}}
{name} OptionList {{ height: auto; max-height: 20; }}
{name} .hint {{ color: $text-muted; }}
"""

COMMANDS: dict[str, str] = {
    "/new": "start a new session",
    "/sessions": "pick a session: Chats or Background, with search (only when idle)",
    "/tree": "the session's whole tree: move to any entry, or before a message of yours (only when idle)",
    "/provider": "this session's provider (/provider NAME, or pick one)",
    "/model": "this session's model (/model NAME, or pick one)",
    "/effort": "this session's reasoning effort (/effort low|medium|high|default, or pick one)",
    "/cwd": "this session's workspace, where its tools work (/cwd DIR to move an idle session there)",
    "/attach": "attach a file to the next message (/attach PATH; listed above the editor)",
    "/detach": "remove an attached file (/detach N), or all of them (/detach)",
    "/continue": "start the items left waiting in the queue after a stop or a failure",
    "/clear": "remove the items waiting in the queue",
    "/help": "this help",
}

KEYS: list[tuple[str, str]] = [
    ("Enter", "idle: send; while the agent works: add the text as steering; a question waits: answer it"),
    ("Alt+Enter, Ctrl+F", "while the agent works (or a question waits): add a follow-up (Ctrl+F: any terminal)"),
    ("Shift+Enter, Ctrl+J", "a new line in the editor"),
    ("Alt+Up", "every pending item back into the editor, before the draft"),
    ("Ctrl+C", "stop the response you saw running (or waiting for your answer); pending items are kept"),
    ("Esc", "closes a picker or dialog first; retry wait: cancel it; working: pending back, then stop"),
    ("PageUp, PageDown", "scroll the conversation; PageUp at its top shows older messages"),
    ("Tab, Shift+Tab", "reach the tool activity: Enter (or a click) shows a long result whole, or folds it"),
    ("Ctrl+T", "the session's tree, like /tree"),
    ("Ctrl+Q", "quit (the session lives on in the Gateway)"),
]


def help_text() -> str:
    width = max(len(key) for key, _ in KEYS)
    lines = ["Keys", ""]
    lines += [f"  {key.ljust(width)}  {what}" for key, what in KEYS]
    lines += ["", "Commands (typed in the editor)", ""]
    width = max(len(name) for name in COMMANDS)
    lines += [f"  {name.ljust(width)}  {what}" for name, what in COMMANDS.items()]
    lines += ["", "Esc closes this help."]
    return "\n".join(lines)


class HelpScreen(ModalScreen[None]):
    DEFAULT_CSS = BOX_CSS.format(name="HelpScreen")
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "close", "Close")]

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(help_text(), id="help-text", markup=False)

    def action_close(self) -> None:
        self.dismiss(None)


class ConfirmScreen(ModalScreen[bool]):
    """A question answered with Enter (yes) or Esc (no)."""

    DEFAULT_CSS = BOX_CSS.format(name="ConfirmScreen")
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "answer(False)", "No"),
        Binding("enter", "answer(True)", "Yes"),
    ]

    def __init__(self, question: str) -> None:
        super().__init__()
        self.question = question

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(self.question, id="question", markup=False)
            yield Static("Enter: yes · Esc: no", classes="hint", markup=False)

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)


class ChoiceScreen(ModalScreen[str | None]):
    """One value out of a few: Up/Down, Enter chooses, Esc cancels."""

    DEFAULT_CSS = BOX_CSS.format(name="ChoiceScreen")
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, title: str, choices: list[tuple[str, str]], current: str | None = None) -> None:
        """``choices``: (value, label) pairs."""
        super().__init__()
        self.title_text = title
        self.choices = choices
        self.current = current

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(self.title_text, markup=False)
            yield OptionList(*[Option(label, id=value) for value, label in self.choices], id="choices")
            yield Static("Up/Down · Enter chooses · Esc cancels", classes="hint", markup=False)

    def on_mount(self) -> None:
        options = self.query_one(OptionList)
        values = [value for value, _ in self.choices]
        if self.current in values:
            options.highlighted = values.index(str(self.current))
        options.focus()

    @on(OptionList.OptionSelected)
    def chosen(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

    def action_cancel(self) -> None:
        self.dismiss(None)


def session_label(session: Session, residents: dict[str, Resident] | None = None) -> Text:
    """The session's title and settings; for a Background session its state and last outcome, and what
    started it (K4); its last message (U1) on the line below."""
    label = Text(session.title or "(untitled)", style="bold")
    label.append(f" · {session.role} · {session.model} · {session.id}", style="dim")
    label.append_text(background_lines(session, residents))
    if session.preview:
        label.append(f"\n  {session.preview}")
    return label


def hit_label(hit: SearchHit) -> Text:
    """A search hit: the session's title, then the snippet with the matched words (``[word]``) in bold."""
    label = Text(hit.session_title or "(untitled)", style="bold")
    label.append(f" · {hit.session_id}\n  ", style="dim")
    for number, part in enumerate(re.split(r"\[([^\[\]]*)\]", " ".join(hit.snippet.split()))):
        label.append(part, style="bold reverse" if number % 2 else "")
    return label


class SessionPicker(ModalScreen[str | None]):
    """Chats and Background tabs, by pages (``session.list`` cursors); typing searches (``session.search``).

    Up/Down move in the list, Enter opens the highlighted session (or loads the next page), Tab switches
    between Chats and Background, Esc closes the picker. On a highlighted session, Ctrl+R lists what goes
    with what started it (its schedule's runs, or its parent's delegated tasks with the parent first) and
    Ctrl+T the tasks it delegated (K4); Enter opens one, Tab or typing goes back to the sessions.
    """

    DEFAULT_CSS = BOX_CSS.format(name="SessionPicker")
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Close"),
        Binding("tab", "switch_tab", "Chats / Background", priority=True),
        Binding("ctrl+r", "related", "Its schedule's runs / its parent's tasks", priority=True),
        Binding("ctrl+t", "tasks", "Its delegated tasks", priority=True),
        Binding("down", "move(1)", show=False, priority=True),
        Binding("up", "move(-1)", show=False, priority=True),
    ]

    def __init__(self, call: Call) -> None:
        super().__init__()
        self.call = call
        self.kind: SessionKind = "chat"
        self.cursor: str | None = None
        self.sessions: list[Session] = []
        self.hits: list[SearchHit] = []
        self.loading = False
        self.loaded = 0  # lists shown (pages or search hits) since the picker opened
        self.residents: dict[str, Resident] | None = None  # by id, read once the Background tab shows

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Tabs(Tab("Chats", id="chat"), Tab("Background", id="background"))
            yield Input(placeholder="search the messages of every session", id="search")
            yield Static("", id="listing", classes="hint", markup=False)
            yield OptionList(id="sessions")
            yield Static(
                "Up/Down · Enter opens · Tab: Chats / Background · Ctrl+R: its runs or its parent's tasks · "
                "Ctrl+T: its delegated tasks · Esc closes",
                classes="hint",
                markup=False,
            )

    @property
    def options(self) -> OptionList:
        return self.query_one(OptionList)

    async def on_mount(self) -> None:
        self.query_one(Input).focus()
        await self.reload()

    async def reload(self) -> None:
        self.cursor, self.sessions, self.hits = None, [], []
        query = self.query_one(Input).value.strip()
        if query:
            await self.search(query)
        else:
            await self.load_page()

    async def load_page(self) -> None:
        page = await self.call(m.SESSION_LIST, ListParams(kind=self.kind, limit=PICKER_PAGE, cursor=self.cursor))
        if self.residents is None and any(s.origin is not None and s.origin.kind == "resident" for s in page.items):
            found: list[Resident] = await self.call(m.RESIDENT_LIST, NoParams())
            self.residents = {resident.id: resident for resident in found}
        self.sessions += page.items
        self.cursor = page.next_cursor
        self._listing("")
        options = [Option(session_label(s, self.residents), id=s.id) for s in self.sessions]
        if self.cursor:
            options.append(Option("… more sessions (Enter)", id=MORE))
        self._show(options)

    async def search(self, query: str) -> None:
        self.hits = hits = await self.call(m.SESSION_SEARCH, SearchParams(query=query, kind=self.kind, limit=50))
        seen: set[str] = set()
        options = []
        for hit in hits:
            if hit.session_id in seen:
                continue
            seen.add(hit.session_id)
            options.append(Option(hit_label(hit), id=hit.session_id))
        self._show(options)

    def _show(self, options: list[Option]) -> None:
        keep = self.options.highlighted
        self.options.clear_options()
        self.options.add_options(options)
        if options:
            self.options.highlighted = min(keep or 0, len(options) - 1)
        self.loaded += 1

    @on(Tabs.TabActivated)
    async def tab_changed(self, event: Tabs.TabActivated) -> None:
        if event.tab.id in ("chat", "background") and event.tab.id != self.kind:
            self.kind = "chat" if event.tab.id == "chat" else "background"
            self.options.highlighted = None
            await self.reload()

    @on(Input.Changed)
    async def query_changed(self) -> None:
        self.options.highlighted = None
        await self.reload()

    @on(Input.Submitted)
    async def enter(self) -> None:
        index = self.options.highlighted
        if index is not None:
            await self.choose(self.options.get_option_at_index(index).id)

    @on(OptionList.OptionSelected)
    async def selected(self, event: OptionList.OptionSelected) -> None:
        await self.choose(event.option.id)

    async def choose(self, value: str | None) -> None:
        if value == MORE:
            await self.load_page()
        elif value is not None:
            self.dismiss(value)

    def action_switch_tab(self) -> None:
        tabs = self.query_one(Tabs)
        tabs.active = "background" if self.kind == "chat" else "chat"

    def _highlighted(self) -> Session | None:
        index = self.options.highlighted
        chosen = self.options.get_option_at_index(index).id if index is not None else None
        return next((s for s in self.sessions if s.id == chosen), None)

    def _listing(self, what: str) -> None:
        self.query_one("#listing", Static).update(what + (" · Tab or typing: back to the sessions" if what else ""))

    async def action_related(self) -> None:
        """What goes with what started the highlighted session: its schedule's runs (newest first), or its
        parent's delegated tasks, the parent first (Enter opens one)."""
        session = self._highlighted()
        origin = session.origin if session is not None else None
        if origin is not None and origin.kind == "schedule" and origin.schedule_id is not None:
            runs = await self.call(m.SCHEDULE_RUNS, ScheduleRunsParams(schedule=origin.schedule_id, limit=50))
            options = [Option(run_label(origin.name, r), id=r.session_id, disabled=r.session_id is None) for r in runs]
            self._sub_list(f"Runs of the schedule {origin.name}", options)
        elif origin is not None and origin.kind == "delegate" and origin.parent_session_id is not None:
            await self._tasks_of(origin.parent_session_id, with_parent=True)
        else:
            self.notify("Ctrl+R lists a scheduled run's runs or a delegated task's siblings", timeout=3)

    async def action_tasks(self) -> None:
        """The tasks the highlighted session delegated (K2), each opening its child session."""
        session = self._highlighted()
        if session is not None:
            await self._tasks_of(session.id, with_parent=False)

    async def _tasks_of(self, parent_id: str, *, with_parent: bool) -> None:
        tasks = await self.call(m.SESSION_CHILDREN, SessionRef(session_id=parent_id))
        if not tasks and not with_parent:
            self.notify("This session delegated no tasks", timeout=3)
            return
        options = [Option(session_label_parent(parent_id), id=parent_id)] if with_parent else []
        options += [Option(task_label(task), id=task.child_session_id) for task in tasks]
        self._sub_list(f"Tasks delegated by {parent_id}", options)

    def _sub_list(self, what: str, options: list[Option]) -> None:
        self.cursor = None
        self.options.highlighted = None
        self._show(options)
        self._listing(what)

    def action_move(self, step: int) -> None:
        if step > 0:
            self.options.action_cursor_down()
        else:
            self.options.action_cursor_up()

    def action_close(self) -> None:
        self.dismiss(None)


@dataclass(frozen=True)
class TreeChoice:
    node: TreeNode
    summarize: bool


def tree_label(node: TreeNode, labels: dict[int, str]) -> str:
    marker = "▶ " if node.is_head else "• " if node.on_path else "  "
    preview = " ".join(node.preview.split())
    label = node.label or labels.get(node.id)
    tag = f" [{label}]" if label else ""
    head = "  ← current position" if node.is_head else ""
    return f"{'  ' * node.depth}{marker}{node.kind}: {preview}{tag}{head}"


class TreeScreen(ModalScreen[TreeChoice | None]):
    """The whole tree (SPEC T1): Up/Down, Enter selects, ``s`` toggles the summary of the branch left."""

    DEFAULT_CSS = BOX_CSS.format(name="TreeScreen")
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel"),
        Binding("s", "toggle_summary", "Summarize the branch left"),
    ]

    def __init__(self, tree: TreeView) -> None:
        super().__init__()
        self.view = tree
        self.nodes: list[TreeNode] = tree.nodes
        self.summarize = False

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static("The session's tree (▶ current position, • on the current path)", markup=False)
            options = [Option(tree_label(n, self.view.labels), id=str(n.id)) for n in self.nodes]
            yield OptionList(*options, id="tree")
            yield Static(self.summary_hint(), id="summary", classes="hint", markup=False)

    def summary_hint(self) -> str:
        state = "on" if self.summarize else "off"
        return f"Up/Down · Enter selects · s: summarize the branch left ({state}) · Esc cancels"

    def on_mount(self) -> None:
        options = self.query_one(OptionList)
        heads = [i for i, n in enumerate(self.nodes) if n.is_head]
        if heads:
            options.highlighted = heads[0]
        options.focus()

    def action_toggle_summary(self) -> None:
        self.summarize = not self.summarize
        self.query_one("#summary", Static).update(self.summary_hint())

    @on(OptionList.OptionSelected)
    def chosen(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(TreeChoice(node=self.nodes[event.option_index], summarize=self.summarize))

    def action_cancel(self) -> None:
        self.dismiss(None)
