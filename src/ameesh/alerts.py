"""Alerts pushed to a command the user chooses (H14): the canon's ``[alerts] command`` runs with ``sh -c``
for every new alert, the alert as one JSON object on its stdin (``num, agent, kind, session_id, message,
at``), under ``[alerts] timeout`` seconds (then its process group is killed). It runs beside the runner,
never in its way: a failure (exit status, timeout, a command that cannot start) is written to the agent's
thread (kind ``push``) and to the log, and the runner goes on. ``Pushes.drain`` waits for those still
running when the runner ends (each is bounded by its timeout).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable

from ameesh.rows import Alert, as_dict
from commons.processes import kill_group

log = logging.getLogger("ameesh.alerts")
Note = Callable[..., None]


class Pushes:
    def __init__(self) -> None:
        self.running: set[asyncio.Task[None]] = set()

    def push(self, alert: Alert, command: str, timeout: float, *, log: Note) -> None:
        """Start pushing ``alert`` (in the background when an event loop runs, else at once)."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            asyncio.run(self._run(alert, command, timeout, log))
            return
        task = asyncio.create_task(self._run(alert, command, timeout, log))
        self.running.add(task)
        task.add_done_callback(self.running.discard)

    async def drain(self) -> None:
        if self.running:
            await asyncio.gather(*self.running, return_exceptions=True)

    @staticmethod
    async def _run(alert: Alert, command: str, timeout: float, note: Note) -> None:
        body = json.dumps(as_dict(alert), ensure_ascii=False).encode()
        failure = None
        try:
            proc = await asyncio.create_subprocess_shell(
                command,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.PIPE,
                start_new_session=True,
            )
        except OSError as exc:
            failure = f"cannot start: {exc}"
        else:
            try:
                _, err = await asyncio.wait_for(proc.communicate(body), timeout)
            except TimeoutError:
                kill_group(proc.pid)
                await proc.wait()
                failure = f"no end within {timeout:g} s (killed)"
            else:
                if proc.returncode:
                    failure = f"exit {proc.returncode}: {err.decode('utf-8', 'replace').strip()[-300:]}"
        if failure is not None:
            said = f"alert {alert.num} ({alert.kind}) not pushed: {command!r} {failure}"
            log.warning("%s: %s", alert.agent, said)
            note(alert.agent, "push", said)


class Notifications:
    """Alerts sent to notification services through apprise (H17): each alert to the URLs its kind routes
    to (``[alerts] notify``, ``[alerts.routes]``), at once — or, in quiet mode, held and sent as one digest
    per URL set when the runner ends (``drain``), so that a busy supervisor is not interrupted per alert.
    apprise is synchronous: it runs in a worker thread, never on the event loop; a failed delivery is
    written to the agent's thread (kind ``push``) and the runner goes on."""

    def __init__(self) -> None:
        self.running: set[asyncio.Task[None]] = set()
        self.held: dict[tuple[str, ...], list[Alert]] = {}

    def notify(self, alert: Alert, urls: list[str], *, quiet: bool, log: Note) -> None:
        if not urls:
            return
        if quiet:
            self.held.setdefault(tuple(urls), []).append(alert)
            return
        self._start([alert], tuple(urls), log)

    def _start(self, batch: list[Alert], urls: tuple[str, ...], note: Note) -> None:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            asyncio.run(self._send(batch, urls, note))
            return
        task = asyncio.create_task(self._send(batch, urls, note))
        self.running.add(task)
        task.add_done_callback(self.running.discard)

    async def drain(self, note: Note) -> None:
        """Send what quiet mode held (one digest per URL set), then wait for every delivery."""
        held, self.held = self.held, {}
        for urls, batch in held.items():
            self._start(batch, urls, note)
        if self.running:
            await asyncio.gather(*self.running, return_exceptions=True)

    @staticmethod
    async def _send(batch: list[Alert], urls: tuple[str, ...], note: Note) -> None:
        if len(batch) == 1:
            title = f"ameesh: {batch[0].agent}: {batch[0].kind}"
            body = batch[0].message
        else:
            title = f"ameesh: {len(batch)} alerts"
            body = "\n".join(f"{a.agent}: {a.kind}: {a.message}" for a in batch)
        why = await asyncio.to_thread(_deliver, urls, title, body)
        if why is not None:
            for alert in batch:
                said = f"alert {alert.num} ({alert.kind}) not sent: {why}"
                log.warning("%s: %s", alert.agent, said)
                note(alert.agent, "push", said)


def _deliver(urls: tuple[str, ...], title: str, body: str) -> str | None:
    """One notification to every URL (apprise, in a worker thread); why it failed, or None."""
    try:
        import apprise
    except ImportError:
        return "apprise is not installed (pip install apprise)"
    sender = apprise.Apprise()
    refused = [url for url in urls if not sender.add(url)]
    if refused:
        return f"not an apprise URL: {', '.join(refused)}"
    return None if sender.notify(title=title, body=body) else f"delivery failed to {', '.join(urls)}"
