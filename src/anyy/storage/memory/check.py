"""``check`` (D11) of the in-memory store: see :mod:`anyy.storage.checks`. Its search keeps no index on
the side (it reads the messages themselves), so that check finds nothing to compare."""

from __future__ import annotations

from collections.abc import Sequence

from anyy.domain.queue import FINAL_EXECUTION_STATES, outcome_for
from anyy.storage.checks import RECOVERY_NOTE, Finding, checks_to_run
from anyy.storage.memory.queue import QueuePart
from anyy.storage.memory.upkeep import UpkeepPart
from anyy.storage.objects import ObjectFiles


class CheckPart(QueuePart, UpkeepPart):
    def check(self, *, repair: bool = False, skip: Sequence[str] = ()) -> list[Finding]:
        self._check_open()
        run = {
            "integrity": self._check_integrity,
            "search_index": lambda _repair: Finding(check="search_index"),
            "objects": self._check_objects,
            "executions": self._check_executions,
            "queue": self._check_queue,
        }
        wanted = checks_to_run(skip)
        return [run[name](repair) if name in wanted else Finding(check=name, skipped="not asked") for name in run]

    def _check_integrity(self, repair: bool) -> Finding:
        found = Finding(check="integrity")
        entries = self.data.entries
        orphans = sum(1 for r in entries.values() if r.entry.parent is not None and r.entry.parent not in entries)
        found.add(orphans, f"{orphans} entries whose parent is missing")
        heads = sum(
            1
            for r in self.data.sessions.values()
            if r.active and r.session.head is not None and r.session.head not in entries
        )
        found.add(heads, f"{heads} sessions whose head is a missing entry")
        return found

    def _check_objects(self, repair: bool) -> Finding:
        found = Finding(check="objects")
        dangling = sorted(self._referenced() - set(self.data.objects))
        found.add(len(dangling), f"{len(dangling)} referenced objects are not in the store, e.g. {dangling[:1]}")
        unref = [r for r in self.data.entries.values() if r.entry.object and r.entry.object not in r.refs]
        found.add(len(unref), f"{len(unref)} large bodies not counted as references (upkeep could remove them)")
        damaged = [h for h, o in self.data.objects.items() if ObjectFiles.hash_of(o.data) != h]
        found.add(len(damaged), f"{len(damaged)} objects whose bytes do not match their hash, e.g. {damaged[:1]}")
        if repair and unref:
            for record in unref:
                record.refs = [*record.refs, record.entry.object or ""]
            found.repaired = len(unref)
        return found

    def _check_executions(self, repair: bool) -> Finding:
        found = Finding(check="executions")
        left = [
            e.id
            for e in self.data.executions.values()
            if e.state in ("running", "retry_wait")
            and (record := self.data.sessions.get(e.session_id)) is not None
            and record.active
        ]
        found.add(len(left), f"{len(left)} executions left running with no Gateway, e.g. {left[:1]}")
        if repair and left:
            found.repaired = sum(e.state != "running" for e in self.recover_interrupted(RECOVERY_NOTE))
        return found

    def _check_queue(self, repair: bool) -> Finding:
        found = Finding(check="queue")
        executions = self.data.executions
        stuck = [
            r.submission
            for r in self.data.submissions.values()
            if r.submission.state in ("taken", "suspended")
            and (
                (execution := executions.get(r.submission.execution_id or "")) is None
                or execution.state in FINAL_EXECUTION_STATES
            )
        ]
        example = stuck[0].id if stuck else ""
        found.add(len(stuck), f"{len(stuck)} queue items still taken by an execution that ended, e.g. {example}")
        if repair and stuck:
            now = self.clock()
            for submission in stuck:
                execution = executions.get(submission.execution_id or "")
                submission.state = outcome_for(execution.state) if execution is not None else "interrupted"
                submission.version += 1
                submission.updated_at = now
            found.repaired = len(stuck)
        return found
