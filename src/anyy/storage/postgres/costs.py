"""Money (Y1, Y2) on PostgreSQL: the shared SQL with its placeholders and JSON operator."""

from __future__ import annotations

from anyy.storage.costs_sql import CostsSql


class PgCostsSql(CostsSql):
    _JSON_FIELD = "({col}::jsonb ->> '{key}')"

    def _cost_sql(self, text: str) -> str:
        return text.replace("?", "%s")
