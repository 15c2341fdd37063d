"""Money on the wire (Y1-Y3): what ``usage.*`` and ``budget.*`` methods take and return."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from anyy.api.params import Params

UsageGroup = Literal["day", "session", "tree", "model", "schedule", "resident", "role", "channel"]


class UsageParams(Params):
    """``by``: how calls are grouped; ``since``: from when (seconds since the epoch; 0: always);
    ``session_id``: only that session with its delegated children."""

    by: UsageGroup = "day"
    since: Annotated[float, msgspec.Meta(ge=0)] = 0.0
    session_id: str | None = None


class UsageLine(msgspec.Struct, kw_only=True):
    """One group of model calls: ``cost`` in nano-dollars (10⁻⁹ USD) sums the priced calls only;
    ``unpriced`` calls had no price (never counted as $0); ``usd`` says it for people."""

    key: str
    calls: int
    unpriced: int
    cost: int
    usd: str
    input: int
    output: int
    cache_read: int
    cache_write: int
    reasoning: int


class UsageReport(msgspec.Struct, kw_only=True):
    """Lines by ``by``, their total, and the price table in use (``prices``: its name, version and date)."""

    by: str
    lines: list[UsageLine]
    total: UsageLine
    prices: str


class BudgetSetParams(Params):
    """``scope``: ``session:ID`` (a session with its delegated children), ``schedule:ID`` or ``resident:ID``
    (per UTC day); ``usd``: the limit in dollars, or null to go back to the [budgets] default."""

    scope: str
    usd: Annotated[float, msgspec.Meta(ge=0)] | None


class Budget(msgspec.Struct, kw_only=True):
    scope: str
    limit: int  # nano-dollars
    usd: str
    source: Literal["config", "set"]  # [budgets] in config.toml, or set for this scope


class Budgets(msgspec.Struct, kw_only=True):
    budgets: list[Budget]
    warn_at: float
