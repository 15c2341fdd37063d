"""Delegated tasks (SPEC K2) of the in-memory store."""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from anyy.domain.delegation import DelegatedTask, TaskUpdate, apply_update
from anyy.domain.errors import InvalidInput, NotFound
from anyy.storage.memory.core import MemoryCore
from anyy.storage.memory.data import copied


class DelegationPart(MemoryCore):
    def add_delegated_tasks(self, tasks: Sequence[DelegatedTask]) -> list[DelegatedTask]:
        self._check_open()
        now = self.clock()
        stored = [msgspec.structs.replace(task, created_at=now, updated_at=now) for task in tasks]
        taken = [t.child_session_id for t in stored if t.child_session_id in self.data.delegated]
        if taken or len({t.child_session_id for t in stored}) != len(stored):
            raise InvalidInput(f"delegated task(s) already recorded: {', '.join(taken) or 'a repeated child'}")
        for task in stored:
            self.data.delegated[task.child_session_id] = task
        return copied(stored)

    def list_delegated_tasks(
        self,
        *,
        parent_session_id: str | None = None,
        parent_call_id: str | None = None,
        open_only: bool = False,
    ) -> list[DelegatedTask]:
        self._check_open()
        found = [
            task
            for task in self.data.delegated.values()
            if (parent_session_id is None or task.parent_session_id == parent_session_id)
            and (parent_call_id is None or task.parent_call_id == parent_call_id)
            and (not open_only or not task.delivered)
        ]
        return copied(sorted(found, key=lambda t: (t.created_at, t.parent_call_id, t.position)))

    def get_delegated_task(self, child_session_id: str) -> DelegatedTask:
        self._check_open()
        task = self.data.delegated.get(child_session_id)
        if task is None:
            raise NotFound(f"session {child_session_id!r} is not a delegated task")
        return copied(task)

    def update_delegated_task(self, child_session_id: str, update: TaskUpdate) -> DelegatedTask:
        task = apply_update(self.get_delegated_task(child_session_id), update, self.clock())
        self.data.delegated[child_session_id] = task
        return copied(task)
