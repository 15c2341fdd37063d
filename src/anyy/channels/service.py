"""The Gateway's channels (SPEC L1-L3): each configured channel's link polled, its messages turned into
submissions of the channel's session, the answers sent back.

A message is untrusted input from anyone who found the bot. It reaches the model only when its sender was
paired (L2) with the right to talk on the channel's session; any other sender gets a one-time code (at most
a few wait per channel) and nothing else happens. The model never sees a channel's credentials, and no tool
sends on a channel: replies go only to the conversation the message came from, so a prompt-injected model
cannot write to another chat.

Nothing lost, nothing twice (L3): a message becomes a submission whose idempotency key is the message's
platform key, then is recorded (with the platform's read position) in one transaction; only then is the
read position given to the platform (Telegram forgets updates below the next poll's offset). A Gateway
killed in between gets the message again and the same key finds the same submission. Replies are recorded
before they are sent and marked delivered after; an answer recorded once is not recorded again.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from anyy.channels.links import Link, LinkFactory, Message, SendFailed
from anyy.domain.channels import CODE_SECONDS, Inbound, Pairing, Reply, split_text
from anyy.domain.entries import EntryKind
from anyy.domain.errors import InvalidInput, NotFound
from anyy.domain.queue import NewSubmission, Submission
from anyy.profiles.channels_file import ChannelSettings, load_channels
from anyy.storage.protocol import SessionStore
from anyy.tools.approvals import QUESTION_PREFIX

if TYPE_CHECKING:
    from anyy.runtime.runtime import Runtime

log = logging.getLogger("anyy.channels")

FINAL_STATES = frozenset({"completed", "failed", "interrupted", "timed_out", "cancelled", "cleared"})
MAX_BACKOFF = 300.0
STANDBY_SECONDS = 2.0  # how often a standing-by Gateway asks for a channel (L4)
CLOSE_GRACE = 10.0  # seconds a stopping channel lets the reply being sent finish
APPROVAL_WORDS = {"yes": "once", "y": "once", "once": "once", "always": "session", "session": "session"}
APPROVAL_WORDS |= {"no": "deny", "n": "deny", "deny": "deny"}


@dataclass
class Running:
    name: str
    settings: ChannelSettings
    session_id: str = ""
    state: str = "starting"  # starting, polling, failed, stopped
    error: str = ""
    link: Link | None = None
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    tasks: list[asyncio.Task[None]] = field(default_factory=list)
    watchers: dict[str, asyncio.Task[None]] = field(default_factory=dict)
    sender: asyncio.Task[None] | None = None  # the outbox's task
    closing: bool = False


def telegram_link(name: str, settings: ChannelSettings, token: str) -> Link:
    from anyy.channels.telegram import TelegramLink

    return TelegramLink(name, settings, token)


def email_link(name: str, settings: ChannelSettings, password: str) -> Link:
    from anyy.channels.email_link import EmailLink

    return EmailLink(name, settings, password)


class Channels:
    def __init__(
        self,
        runtime: Runtime,
        profile_dir: Path,
        *,
        environ: dict[str, str] | None = None,
        links: dict[str, LinkFactory] | None = None,
    ) -> None:
        self.runtime = runtime
        self.deps = runtime.deps
        self.profile_dir = profile_dir
        self.environ = environ
        self.links: dict[str, LinkFactory] = links or {"telegram": telegram_link, "email": email_link}
        self.running: dict[str, Running] = {}

    async def _store(self, fn: Callable[[SessionStore], Any]) -> Any:
        return await self.deps.owner.call(fn)

    # -- life --------------------------------------------------------------------------------------
    async def start(self) -> None:
        try:
            configured = load_channels(self.profile_dir)
        except InvalidInput as exc:
            log.error("channels not started: %s", exc)
            return
        for name, settings in configured.items():
            self._start(name, settings)

    async def reload(self) -> list[str]:
        """Read channels.toml again: removed or changed channels stop, new or changed ones start."""
        configured = load_channels(self.profile_dir)
        for name, running in list(self.running.items()):
            if configured.get(name) != running.settings:
                await self._stop(name)
        for name, settings in configured.items():
            if name not in self.running:
                self._start(name, settings)
        return sorted(self.running)

    async def aclose(self) -> None:
        for name in list(self.running):
            await self._stop(name)

    def _start(self, name: str, settings: ChannelSettings) -> None:
        running = self.running[name] = Running(name=name, settings=settings)
        running.tasks.append(asyncio.create_task(self._run(running), name=f"channel-{name}"))

    async def _stop(self, name: str) -> None:
        """Stop polling and watching at once; a reply being sent is let finish and recorded (cancelled
        between the platform's answer and the record, it would be sent again at the next start)."""
        running = self.running.pop(name)
        running.closing = True
        running.wake.set()
        if running.sender is not None:
            with contextlib.suppress(TimeoutError, asyncio.CancelledError, Exception):
                await asyncio.wait_for(asyncio.shield(running.sender), CLOSE_GRACE)
        tasks = [*running.tasks, *running.watchers.values()]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        if running.link is not None:
            with contextlib.suppress(Exception):
                await running.link.aclose()

    async def forget(self, name: str) -> None:
        if name in self.running:
            await self._stop(name)
        await self._store(lambda s: s.forget_channel(name))

    # -- one channel -------------------------------------------------------------------------------
    async def _run(self, running: Running) -> None:
        name, settings = running.name, running.settings
        try:
            running.session_id = await self._target(settings)
            environ = self.environ if self.environ is not None else dict(__import__("os").environ)
            token = environ.get(settings.token_env, "").strip()
            if not token:
                raise InvalidInput(
                    f"the environment variable {settings.token_env} (token_env of [channels.{name}]) is not set in "
                    "the Gateway's environment: set it and restart the Gateway"
                )
            running.link = self.links[settings.kind](name, settings, token)
            await self._hold(running)
            await running.link.open()
        except Exception as exc:
            running.state, running.error = "failed", _say(exc)
            log.error("channel %s not started: %s", name, running.error)
            return
        unanswered: list[Inbound] = await self._store(lambda s: s.unanswered_inbound(name))
        for inbound in unanswered:
            self._watch(running, inbound)
        await self._continue(running, unanswered)
        running.sender = asyncio.create_task(self._deliver(running), name=f"channel-{name}-out")
        running.tasks.append(running.sender)
        running.wake.set()
        await self._poll(running)

    async def _hold(self, running: Running) -> None:
        """Wait until this Gateway holds the channel (L4): with several Gateways on one store, one polls it,
        the others stand by and take it once its holder is gone."""
        while not await self._store(lambda s: s.claim_channel(running.name)):
            running.state, running.error = "standby", "another Gateway of the service polls this channel"
            await self.deps.wall.sleep(STANDBY_SECONDS)

    async def _continue(self, running: Running, unanswered: list[Inbound]) -> None:
        """Messages accepted before a restart and not started yet are started now: a restart starts no
        queue by itself, but each of these was accepted to be answered, and nobody watches the queue."""
        for inbound in unanswered:
            if inbound.submission_id is None:
                continue
            submission: Submission = await self._store(functools.partial(_submission, inbound.submission_id))
            if submission.state == "pending":
                await self.runtime.continue_queue(running.session_id)
                return

    async def _target(self, settings: ChannelSettings) -> str:
        if settings.session:
            session = await self._store(lambda s: s.get_session(settings.session))
            return str(session.id)
        resident = await self._store(lambda s: s.get_resident(settings.resident))
        return str(resident.session_id)

    async def _poll(self, running: Running) -> None:
        assert running.link is not None
        failures = 0
        while True:
            if not await self._store(lambda s: s.claim_channel(running.name)):  # taken over (L4): wait again
                log.warning("channel %s: another Gateway of the service took it over", running.name)
                await self._hold(running)
            position = await self._store(lambda s: s.channel_position(running.name))
            try:
                messages = await running.link.poll(position)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                failures += 1
                running.state, running.error = "retrying", _say(exc)
                log.warning("channel %s: poll failed (%s); again in a while", running.name, running.error)
                await self.deps.wall.sleep(min(2.0**failures, MAX_BACKOFF))
                continue
            failures = 0
            running.state, running.error = "polling", ""
            for message in messages:
                await self.inbound(running, message)
            running.wake.set()  # replies another Gateway of the service queued (a pairing there) go out too

    # -- inbound -----------------------------------------------------------------------------------
    async def inbound(self, running: Running, message: Message) -> None:
        name, session_id = running.name, running.session_id
        base = Inbound(
            channel=name,
            key=message.key,
            conversation=message.conversation,
            sender=message.sender,
            session_id=session_id,
            submission_id=None,
        )
        if not message.sender or not message.conversation:  # not a message (an edit, a join): skipped
            await self._store(lambda s: s.record_inbound(base, message.position, []))
            return
        if await self._store(lambda s: s.get_inbound(name, message.key)) is not None:
            await self._store(lambda s: s.record_inbound(base, message.position, []))  # only the position
            return
        pairing: Pairing | None = await self._store(lambda s: s.get_pairing(name, message.sender, session_id))
        if pairing is None:
            await self._refuse(running, message, base)
            return
        text = message.text.strip()
        if text.lower() in ("/stop", "stop"):
            await self._done(running, message, base, await self._stop_work(session_id, pairing))
            return
        question = await self._waiting_question(session_id)
        if question is not None and text:
            await self._done(running, message, base, await self._answer(session_id, pairing, question, text))
            return
        if "talk" not in pairing.rights:
            await self._done(running, message, base, "You are paired without the right to send messages here.")
            return
        if not text:
            await self._done(running, message, base, "Only text messages are taken on this channel for now.")
            return
        new = NewSubmission(kind="follow_up", text=text, key=f"channel:{name}:{message.key}")
        submission: Submission = await self.runtime.submit(session_id, new)
        inbound = msgspec.structs.replace(base, submission_id=submission.id)
        await self._store(lambda s: s.record_inbound(inbound, message.position, []))
        self._watch(running, inbound)

    async def _refuse(self, running: Running, message: Message, base: Inbound) -> None:
        """An unknown sender: a pairing code (the same one while it waits), never the model."""
        name = running.name
        code = await self._store(
            lambda s: s.channel_code(name, message.sender, message.conversation, message.label, CODE_SECONDS)
        )
        if code is None:
            text = "This agent does not know you yet, and too many pairing requests are waiting: try again later."
        else:
            text = (
                f"This agent does not know you yet. Your pairing code is {code} (valid one hour): its owner "
                f"approves you with `anyy channel pair {code}`."
            )
        await self._done(running, message, base, text)

    async def _done(self, running: Running, message: Message, base: Inbound, text: str) -> None:
        reply = Reply(channel=running.name, key=f"{message.key}#0000", conversation=message.conversation, text=text)
        replies = [reply] if text else []
        await self._store(lambda s: s.record_inbound(base, message.position, replies))
        running.wake.set()

    async def _stop_work(self, session_id: str, pairing: Pairing) -> str:
        if "stop" not in pairing.rights:
            return "You may not stop this agent's work."
        execution_id = self.runtime.running_execution(session_id)
        if execution_id is None:
            return "Nothing is running."
        await self.runtime.stop(session_id, execution_id)
        return "Stopped."

    async def _waiting_question(self, session_id: str) -> tuple[str, str] | None:
        """The execution waiting for an answer and its question, if the session waits on one."""
        active = await self._store(lambda s: s.list_executions(session_id, active_only=True))
        suspended = next((e for e in active if e.state == "suspended"), None)
        if suspended is None or self.runtime.delegations.waiting(suspended.id):
            return None
        page = await self._store(lambda s: s.history(session_id, limit=20))
        question = next((e for e in page.items if e.kind == EntryKind.QUESTION), None)
        return None if question is None else (suspended.id, question.text)

    async def _answer(self, session_id: str, pairing: Pairing, question: tuple[str, str], text: str) -> str:
        if "answer" not in pairing.rights:
            return "You may not answer this agent's questions."
        execution_id, asked = question
        if asked.startswith(QUESTION_PREFIX):
            decision = APPROVAL_WORDS.get(text.lower())
            if decision is None:
                return "Answer the approval with yes (once), always (for this session) or no."
            await self.runtime.approve(session_id, execution_id, decision)
            return ""
        await self.runtime.answer(session_id, execution_id, text)
        return ""

    # -- answers -----------------------------------------------------------------------------------
    def _watch(self, running: Running, inbound: Inbound) -> None:
        if inbound.submission_id is None or inbound.key in running.watchers:
            return
        task = asyncio.create_task(self._answer_when_done(running, inbound), name=f"channel-{running.name}-watch")
        running.watchers[inbound.key] = task
        task.add_done_callback(lambda _: running.watchers.pop(inbound.key, None))

    async def _answer_when_done(self, running: Running, inbound: Inbound) -> None:
        assert inbound.submission_id is not None
        submission_id = inbound.submission_id
        asked: set[int] = set()
        limit = running.link.limit if running.link is not None else 4096
        while True:
            events = self.deps.bus.subscribe(inbound.session_id)
            try:
                submission: Submission = await self.runtime.wait_submission(submission_id, 3600.0)
                if submission.state in FINAL_STATES:
                    break
                if submission.state == "suspended":
                    question = await self._question_of(submission)
                    if question is not None and question[0] not in asked:
                        asked.add(question[0])
                        reply = Reply(
                            channel=running.name,
                            key=f"{inbound.key}#q{question[0]}",
                            conversation=inbound.conversation,
                            text=question[1] + _answer_hint(question[1]),
                        )
                        await self._store(functools.partial(_queue, replies=[reply]))
                        running.wake.set()
                    while (await self._store(lambda s: s.get_submission(submission_id))).state == "suspended":
                        await events.get()
            finally:
                events.close()
        text = await self._answer_text(submission)
        replies = [
            Reply(channel=running.name, key=f"{inbound.key}#{i + 1:04d}", conversation=inbound.conversation, text=part)
            for i, part in enumerate(split_text(text, limit))
        ]
        await self._store(lambda s: s.queue_replies(replies, answers=inbound.key))
        running.wake.set()

    async def _question_of(self, submission: Submission) -> tuple[int, str] | None:
        page = await self._store(lambda s: s.history(submission.session_id, limit=20))
        for entry in page.items:
            if entry.kind == EntryKind.QUESTION:
                return entry.id, entry.text
        return None

    async def _answer_text(self, submission: Submission) -> str:
        """What the submission's execution answered: its assistant text on the session's path."""
        texts: list[str] = []
        page = await self._store(lambda s: s.history(submission.session_id, limit=100))
        for entry in page.items:  # newest first
            if entry.id == submission.entry_id:
                break
            if entry.kind == EntryKind.ASSISTANT and entry.text.strip() and entry.created_at <= submission.updated_at:
                texts.append(entry.text.strip())
        answer = "\n\n".join(reversed(texts))
        if submission.state != "completed":
            quoted = " ".join(submission.text.split())
            quoted = quoted if len(quoted) <= 40 else quoted[:39] + "…"
            note = f"(the agent's work on «{quoted}» ended {submission.state.replace('_', ' ')}"
            note += f": {submission.error}" if submission.error else ""
            note += "; send it again to retry)" if submission.state == "interrupted" else ")"
            answer = f"{answer}\n\n{note}" if answer else note
        return answer or "(the agent answered with no text)"

    # -- outbound ----------------------------------------------------------------------------------
    async def _deliver(self, running: Running) -> None:
        assert running.link is not None
        while not running.closing:
            running.wake.clear()
            due_in = await self._send_due(running)
            if due_in is None:
                await running.wake.wait()
                continue
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(running.wake.wait(), due_in)

    async def _send_due(self, running: Running) -> float | None:
        """Send what waits, in order; the seconds until a failed one may be tried again, if any."""
        assert running.link is not None
        name = running.name
        pending: list[Reply] = await self._store(lambda s: s.pending_replies(name))
        for reply in pending:
            if running.closing:
                return None
            now = self.deps.wall.now()
            if reply.next_at > now:
                return reply.next_at - now
            try:
                sent = await running.link.send(reply.conversation, reply.text)
            except asyncio.CancelledError:
                raise
            except SendFailed as exc:
                if exc.permanent:  # sending it again cannot work: recorded as given up, the next ones go on
                    log.error("channel %s: reply %s dropped: %s", name, reply.key, exc)
                    await self._store(functools.partial(_gave_up, reply=reply, error=str(exc)))
                    continue
                wait = exc.retry_after or min(2.0 ** (reply.attempts + 1), MAX_BACKOFF)
                await self._store(functools.partial(_failed, reply=reply, error=str(exc), next_at=now + wait))
                return wait
            except Exception as exc:
                wait = min(2.0 ** (reply.attempts + 1), MAX_BACKOFF)
                await self._store(functools.partial(_failed, reply=reply, error=_say(exc), next_at=now + wait))
                return wait
            await self._store(functools.partial(_sent, reply=reply, platform_id=sent))
        return None

    # -- the API's views ---------------------------------------------------------------------------
    def status(self, name: str) -> tuple[str, str]:
        running = self.running.get(name)
        if running is None:
            return "stopped", ""
        return running.state, running.error

    async def pair(self, code: str, rights: list[str] | None) -> Pairing:
        codes = await self._store(lambda s: s.list_channel_codes())
        from anyy.domain.channels import normal_code

        pending = next((c for c in codes if c.code == normal_code(code)), None)
        if pending is None:
            raise NotFound(
                f"no pairing code {code!r} is waiting (codes expire after an hour): ask the sender to write to the "
                "channel again for a new one; `anyy channel list` shows the codes waiting"
            )
        settings = self._settings(pending.channel)
        session_id = await self._target(settings)
        chosen = list(rights) if rights else list(settings.rights)
        pairing: Pairing = await self._store(lambda s: s.pair_with_code(code, session_id, chosen))
        running = self.running.get(pending.channel)
        if running is not None:
            reply = Reply(
                channel=pairing.channel,
                key=f"paired:{pairing.sender}:{pairing.paired_at}",
                conversation=pairing.conversation,
                text=f"You are paired: you may {', '.join(pairing.rights)}.",
            )
            await self._store(lambda s: s.queue_replies([reply]))
            running.wake.set()
        return pairing

    def _settings(self, name: str) -> ChannelSettings:
        running = self.running.get(name)
        if running is not None:
            return running.settings
        found = load_channels(self.profile_dir).get(name)
        if found is None:
            raise NotFound(f"no channel {name!r}: `anyy channel list` shows them")
        return found


def _submission(submission_id: str, store: SessionStore) -> Submission:
    return store.get_submission(submission_id)


def _queue(store: SessionStore, *, replies: list[Reply]) -> None:
    store.queue_replies(replies)


def _sent(store: SessionStore, *, reply: Reply, platform_id: str) -> None:
    store.reply_sent(reply.channel, reply.key, platform_id)


def _failed(store: SessionStore, *, reply: Reply, error: str, next_at: float) -> None:
    store.reply_failed(reply.channel, reply.key, error, next_at)


def _gave_up(store: SessionStore, *, reply: Reply, error: str) -> None:
    store.reply_failed(reply.channel, reply.key, f"given up: {error}", float("inf"))
    store.reply_sent(reply.channel, reply.key, "")


def _answer_hint(question: str) -> str:
    if question.startswith(QUESTION_PREFIX):
        return "\n\nAnswer yes (once), always (for this session) or no."
    return "\n\nAnswer with your next message."


def _say(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__
