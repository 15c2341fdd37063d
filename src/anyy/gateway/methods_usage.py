"""Methods on money (Y1-Y3): usage reports over the store, and budgets per session, schedule and resident.

Only a client of the profile calls these: no tool reaches them, so a model (prompt-injected or not) cannot
raise a budget.
"""

from __future__ import annotations

from anyy.api import methods as api
from anyy.api import usage as wire
from anyy.api.params import NoParams
from anyy.domain.budgets import check_scope
from anyy.domain.pricing import CostLine, format_usd, usd_to_nano
from anyy.gateway.state import Connection, Gateway
from anyy.gateway.table import TABLE
from anyy.runtime.pricing import table_description


def line_view(line: CostLine) -> wire.UsageLine:
    return wire.UsageLine(
        key=line.key,
        calls=line.calls,
        unpriced=line.unpriced,
        cost=line.cost_nano,
        usd=line.usd,
        input=line.input,
        output=line.output,
        cache_read=line.cache_read,
        cache_write=line.cache_write,
        reasoning=line.reasoning,
    )


def total_of(lines: list[CostLine]) -> CostLine:
    total = CostLine(key="total")
    for line in lines:
        total.calls += line.calls
        total.unpriced += line.unpriced
        total.cost_nano += line.cost_nano
        total.input += line.input
        total.output += line.output
        total.cache_read += line.cache_read
        total.cache_write += line.cache_write
        total.reasoning += line.reasoning
    return total


@TABLE.method(api.USAGE_REPORT)
async def report(gw: Gateway, conn: Connection | None, p: wire.UsageParams) -> wire.UsageReport:
    """What the profile's model calls cost, grouped ``by`` day, session, tree (a session with its delegated
    children), model, schedule, resident, role or channel, exact sums of the cost kept with each call.
    Unpriced calls (a model with no price) are counted apart, never as $0."""
    lines = await gw.deps.owner.call(lambda s: s.usage_report(p.by, since=p.since, session_id=p.session_id))
    return wire.UsageReport(
        by=p.by,
        lines=[line_view(line) for line in lines],
        total=line_view(total_of(lines)),
        prices=table_description(),
    )


async def _budgets(gw: Gateway) -> wire.Budgets:
    config = gw.profile.load_config().budgets
    found = [
        wire.Budget(scope=kind, limit=usd_to_nano(usd), usd=format_usd(usd_to_nano(usd)), source="config")
        for kind, usd in (
            ("day", config.day),
            ("month", config.month),
            ("session", config.session),
            ("schedule", config.schedule),
            ("resident", config.resident),
        )
        if usd > 0
    ]
    own = await gw.deps.owner.call(lambda s: s.list_budgets())
    found += [wire.Budget(scope=k, limit=v, usd=format_usd(v), source="set") for k, v in own.items()]
    return wire.Budgets(budgets=found, warn_at=config.warn_at)


@TABLE.method(api.BUDGET_LIST)
async def list_(gw: Gateway, conn: Connection | None, p: NoParams) -> wire.Budgets:
    """The budgets in force: the profile's ([budgets] in config.toml: ``day`` and ``month`` for the whole
    profile, ``session``, ``schedule``, ``resident`` as defaults of each) and those set per scope."""
    return await _budgets(gw)


@TABLE.method(api.BUDGET_SET)
async def set_(gw: Gateway, conn: Connection | None, p: wire.BudgetSetParams) -> wire.Budgets:
    """Set the budget of one session (with its delegated children), schedule or resident, in dollars;
    ``usd`` null removes it (the [budgets] default applies again). A session stopped ``budget_exhausted``
    goes on with ``session.continue``."""
    check_scope(p.scope)
    limit = None if p.usd is None else usd_to_nano(p.usd)
    await gw.deps.owner.call(lambda s: s.set_budget(p.scope, limit))
    return await _budgets(gw)
