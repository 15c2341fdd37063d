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
