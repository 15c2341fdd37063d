"""The commands typed alone in the editor (SPEC B2, T1, T2): ``/new``, ``/sessions``, ``/tree``, ``/help``,
and the model settings of :mod:`anyy.tui.settings` (``/provider``, ``/model``, ``/effort``).
``/sessions`` and ``/tree`` need an idle session."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import msgspec

from anyy.api import methods as m
from anyy.api.params import ClearParams, NavigateParams, NoParams, SessionRef, SettingsParams
from anyy.api.sessions import TreeView
from anyy.client.errors import GatewayError
from anyy.client.workspace import client_workspace, shown
from anyy.domain.errors import InvalidInput
from anyy.tui import settings
from anyy.tui.attachments import AttachError, upload
from anyy.tui.host import Host
from anyy.tui.screens import COMMANDS, ConfirmScreen, HelpScreen, SessionPicker, TreeChoice, TreeScreen

WAIT_OR_STOP = "{command}: wait for the response to finish, or stop it (Ctrl+C) first."
ANSWER_OR_STOP = "{command}: answer the agent's question first, or stop its execution (Ctrl+C)."

Command = Callable[[str], Awaitable[None]]


class Commands:
    def __init__(self, host: Host) -> None:
        self.host = host
        self.state = host.state
        model = settings.ModelSettings(host)
        self.table: dict[str, Command] = {
            "/new": self.new,
            "/help": self.help,
            "/sessions": self.sessions,
            "/tree": self.tree,
            "/provider": model.provider,
            "/model": model.model,
            "/effort": model.effort,
            "/cwd": self.cwd,
            "/attach": self.attach,
            "/detach": self.detach,
            "/continue": self.continue_queue,
            "/clear": self.clear_queue,
        }

    async def run(self, line: str) -> None:
        name, _, argument = line.partition(" ")
        command = self.table.get(name)
        if command is None:
            await self.host.say(f"Unknown command {name}; known: {', '.join(COMMANDS)} (/help explains them).")
            return
        self.host.editor.clear()
        try:
            await command(argument.strip())
        except GatewayError as exc:
            await self.host.say(f"{name} failed: {exc}")

    async def new(self, argument: str) -> None:
        await self.host.conversation.clear()
        await self.host.open_draft()
        await self.host.say("New session: it is named after your first message.")

    async def cwd(self, argument: str) -> None:
        """``/cwd``: say the session's workspace; ``/cwd DIR``: move it there (W1), a draft at once, a session
        only while idle (the Gateway refuses otherwise). A relative DIR is taken from the TUI's directory."""
        session = self.state.session
        if session is None:
            return
        if not argument:
            await self.host.say(f"This session works in {shown(session.workspace)}.")
            return
        try:
            path = client_workspace(argument)
            if self.host.drafting:
                changed = msgspec.structs.replace(session, workspace=path)
            else:
                params = SettingsParams(session_id=session.id, workspace=path)
                changed = await self.host.call(m.SESSION_SETTINGS, params)
        except (GatewayError, InvalidInput) as exc:
            await self.host.say(f"/cwd: not changed: {exc}")
            return
        self.state.session = changed
        await self.host.say(f"This session now works in {shown(changed.workspace)}.")

    async def attach(self, argument: str) -> None:
        """Upload a file for the next message (``/attach PATH``)."""
        try:
            attached = await upload(self.host.address, argument, text_only=await self._text_only())
        except AttachError as exc:
            await self.host.say(f"/attach: {exc}")
            return
        self.state.attachments = [*self.state.attachments, attached]

    async def _text_only(self) -> str:
        """The session's ``provider/model`` when its provider reads text only (``models.list``), else ""."""
        session = self.state.session
        if session is None:
            return ""
        try:
            catalog = await self.host.call(m.MODELS_LIST, NoParams())
        except GatewayError:
            return ""  # the send says it then
        found = next((p for p in catalog.providers if p.name == session.provider), None)
        return f"{session.provider}/{session.model}" if found is not None and not found.images else ""

    async def detach(self, argument: str) -> None:
        """``/detach N`` removes the Nth file listed above the editor; ``/detach`` all of them."""
        files = self.state.attachments
        if not argument or argument == "all":
            self.state.attachments = []
            return
        if not argument.isdigit() or not 1 <= int(argument) <= len(files):
            await self.host.say(f"/detach: give the number of a file listed above the editor (1 to {len(files)}).")
            return
        number = int(argument)
        self.state.attachments = files[: number - 1] + files[number:]

    async def continue_queue(self, argument: str) -> None:
        """The items left waiting after a stop or a failure start now (``session.continue``)."""
        if not self.host.pending.items:
            await self.host.say("/continue: nothing is waiting in the queue.")
            return
        await self.host.call(m.SESSION_CONTINUE, SessionRef(session_id=self.state.session_id))

    async def clear_queue(self, argument: str) -> None:
        """Remove every pending item (``session.queue.clear``); their texts stay in the session's records."""
        if self.host.drafting:
            await self.host.say("/clear: the queue was empty.")
            return
        removed = await self.host.call(m.QUEUE_CLEAR, ClearParams(session_id=self.state.session_id))
        count = len(removed)
        await self.host.say(
            f"/clear: {count} pending item{'s' * (count != 1)} removed." if count else "/clear: the queue was empty."
        )

    async def help(self, argument: str) -> None:
        await self.host.push_screen(HelpScreen())

    async def sessions(self, argument: str) -> None:
        if self.state.busy:
            await self.host.say(WAIT_OR_STOP.format(command="/sessions"))
            return
        await self.host.push_screen(SessionPicker(self.host.call), self.session_chosen)

    async def session_chosen(self, session_id: str | None) -> None:
        if session_id is None or session_id == self.state.session_id:
            return
        try:
            view = await self.host.call(m.SESSION_GET, SessionRef(session_id=session_id))
            await self.host.switch_session(view.session)
        except GatewayError as exc:
            await self.host.say(f"Could not open session {session_id}: {exc}")

    async def tree(self, argument: str) -> None:
        if self.state.busy:
            await self.host.say(WAIT_OR_STOP.format(command="/tree"))
            return
        if self.state.waiting is not None:
            await self.host.say(ANSWER_OR_STOP.format(command="/tree"))
            return
        if self.host.drafting:  # nothing sent yet: an empty tree, as a session just created has
            tree = TreeView(head=None, nodes=[], labels={})
        else:
            tree = await self.host.call(m.SESSION_TREE, SessionRef(session_id=self.state.session_id))
        await self.host.push_screen(TreeScreen(tree), self.tree_chosen)

    async def tree_chosen(self, choice: TreeChoice | None) -> None:
        if choice is None:
            return
        if choice.node.kind == "user" and self.host.editor.text.strip():
            question = (
                "The editor holds a draft: moving before this message puts the message's text in the "
                "editor in its place. Replace the draft?"
            )

            async def answered(yes: bool | None) -> None:
                if yes:
                    await self.navigate(choice)
                else:
                    await self.host.say("Nothing moved; the draft is kept.")

            await self.host.push_screen(ConfirmScreen(question), answered)
            return
        await self.navigate(choice)

    async def navigate(self, choice: TreeChoice) -> None:
        """T2: a user message moves to just before it, its text into the editor; any other entry is the head."""
        node = choice.node
        before = node.kind == "user"
        params = NavigateParams(
            session_id=self.state.session_id, entry_id=node.id, summarize=choice.summarize, before=before
        )
        try:
            result = await self.host.call(m.SESSION_NAVIGATE, params)
        except GatewayError as exc:
            await self.host.say(f"Could not move in the tree: {exc}")
            return
        self.state.session = result.session
        await self.host.conversation.clear()
        await self.host.show_history(await self.host.call(m.SESSION_GET, SessionRef(session_id=result.session.id)))
        if result.draft is not None:
            self.host.editor.set_draft(result.draft)
        where = "before that message (its text is in the editor)" if before else f"to entry {node.id}"
        summary = ""
        if choice.summarize:
            summary = "; the branch left is summarized" if result.summary_applied else "; no summary was made"
        await self.host.say(f"Moved {where}{summary}.")
        if result.note:
            await self.host.say(result.note)
        await self.offer_rewind(result.session.head)

    async def offer_rewind(self, head: int | None) -> None:
        """W3: the conversation moved; offer to restore the workspace's files as they were there (a preview
        first; files changed by hand are kept). Nothing is said when no capture applies."""
        session_id = self.state.session_id
        ask = NavigateParams(session_id=session_id, entry_id=head, files="preview")
        try:
            shown = (await self.host.call(m.SESSION_NAVIGATE, ask)).files
        except GatewayError:
            return  # captures off, or the agent changed no files on this path
        if shown is None or not (shown.added or shown.changed or shown.removed):
            return
        parts = [f"{len(shown.added)} added", f"{len(shown.changed)} changed", f"{len(shown.removed)} removed"]
        question = f"Restore the workspace's files as they were here ({', '.join(parts)})?"
        if shown.hand_edited:
            question += f" Changed by hand since, and kept: {', '.join(shown.hand_edited[:5])}."

        async def answered(yes: bool | None) -> None:
            if not yes:
                await self.host.say("The files were left as they are.")
                return
            restore = NavigateParams(session_id=session_id, entry_id=head, files="restore")
            try:
                done = (await self.host.call(m.SESSION_NAVIGATE, restore)).files
            except GatewayError as exc:
                await self.host.say(f"Could not restore the files: {exc}")
                return
            if done is not None:
                kept = f"; kept (changed by hand): {', '.join(done.kept)}" if done.kept else ""
                await self.host.say(
                    f"Files restored: {len(done.added)} added, {len(done.changed)} changed, "
                    f"{len(done.removed)} removed{kept}."
                )

        await self.host.push_screen(ConfirmScreen(question), answered)
