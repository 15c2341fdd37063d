"""Money (Y1, Y2) on PostgreSQL: the shared SQL with its placeholders and JSON operator."""

from __future__ import annotations

from typing import Any

from anyy.storage.costs_sql import CostsSql

_HOLD_LOCK = 0x616E7979_59320000  # "anyyY2": the advisory lock of budget checks


class PgCostsSql(CostsSql):
    _JSON_FIELD = "({col}::jsonb ->> '{key}')"

    def _cost_sql(self, text: str) -> str:
        return text.replace("?", "%s")

    def _hold_lock(self, conn: Any) -> None:
        # One budget check at a time across every Gateway of the store (released with the transaction).
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_HOLD_LOCK,))
