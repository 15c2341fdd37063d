"""Money (Y1, Y2) of the in-memory store: the rows kept with the entries, summed on demand."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from anyy.domain.budgets import HOLD_SECONDS, BudgetScope, Exhausted, check_scope
from anyy.domain.pricing import CostLine
from anyy.storage import costs_sql
from anyy.storage.memory.core import MemoryCore


def _origin(session: Any, key: str) -> str:
    origin = getattr(session, "origin", None)
    value = getattr(origin, key, None) if origin is not None else None
    return str(value or "")


class CostsPart(MemoryCore):
    def _call_key(self, by: str, row: tuple[Any, ...]) -> str:
        session_id = row[1]
        record = self.data.sessions.get(session_id)
        session = record.session if record is not None else None
        if by == "day":
            return str(row[3])
        if by == "session":
            return str(session_id)
        if by == "model":
            return f"{row[4]}/{row[5]}"
        if by == "tree":
            return _origin(session, "parent_session_id") or str(session_id)
        if by == "role":
            return session.role if session is not None else ""
        if by in ("schedule", "resident"):
            return _origin(session, f"{by}_id")
        return _origin(session, by)

    def usage_report(self, by: str, *, since: float = 0.0, session_id: str | None = None) -> list[CostLine]:
        self._check_open()
        costs_sql.check_group(by)
        groups: dict[str, list[int]] = {}
        for row in self.data.model_calls:
            if row[2] < since:
                continue
            if session_id is not None and session_id not in (row[1], self._call_key("tree", row)):
                continue
            sums = groups.setdefault(self._call_key(by, row), [0] * 8)
            sums[0] += 1
            if row[11] is None:
                sums[1] += 1
            else:
                sums[2] += row[11]
            for i, value in enumerate(row[6:11]):
                sums[3 + i] += value
        return costs_sql.lines_from([(key, *sums) for key, sums in sorted(groups.items())])

    # -- budgets (Y2) -------------------------------------------------------------------------------
    def set_budget(self, scope: str, limit_nano: int | None) -> None:
        self._check_open()
        check_scope(scope)
        if limit_nano is None:
            self.data.budgets.pop(scope, None)
        else:
            self.data.budgets[scope] = limit_nano

    def list_budgets(self) -> dict[str, int]:
        self._check_open()
        return dict(sorted(self.data.budgets.items()))

    def budget_spent(self, scope: BudgetScope) -> int:
        self._check_open()
        return self.data.budget_spend.get((scope.spend_scope, scope.period), 0)

    def hold_budget(self, hold_id: str, scopes: Sequence[BudgetScope], amount: int) -> Exhausted | None:
        self._check_open()
        now = self.clock()
        holds = self._holds()
        for scope in scopes:
            spent = self.budget_spent(scope)
            held = sum(
                a
                for (h, key), (a, at) in holds.items()
                if key == scope.key and h != hold_id and at >= now - HOLD_SECONDS
            )
            if spent + held + amount > scope.limit_nano:
                return Exhausted(scope=scope, spent_nano=spent + held)
        for scope in scopes:
            holds[(hold_id, scope.key)] = (amount, now)
        return None

    def release_budget(self, hold_id: str) -> None:
        self._check_open()
        holds = self._holds()
        for key in [k for k in holds if k[0] == hold_id]:
            del holds[key]

    def _holds(self) -> dict[tuple[str, str], tuple[int, float]]:  # (hold, scope) -> (amount, at)
        return self.data.budget_holds
