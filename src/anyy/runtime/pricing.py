"""Prices of model calls (SPEC Y1): the profile's ``[prices]`` first, then the ``genai-prices`` table.

``genai-prices`` is a maintained table of the providers' prices (cache reads and writes, tiers included),
pinned in pyproject.toml: its data changes only with its version, and :data:`TABLE_DATE` says how old it
is. Importing it takes about a second (its table is a large module), so it is imported on first use, in a
worker thread, never on the event loop and never at start-up; lookups run on that thread too and their
answers are kept per (provider, model).

Which table provider prices a configured provider: the one whose API address matches its ``base_url``
(OpenRouter, DeepSeek, Groq... as the table knows them), else the one of its kind (``openai`` or
``anthropic``). A model that provider does not list is unpriced (never $0): a local server's "llama3"
has no price until the user writes one.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from anyy.domain.entries import Usage
from anyy.domain.pricing import NANO_PER_USD, ModelPrice, cost_nano, worst_case_nano

log = logging.getLogger("anyy.pricing")

# The pinned table's version and the date its data was published (a test checks the version installed).
TABLE_PACKAGE = "genai-prices"
TABLE_VERSION = "0.2.3"
TABLE_DATE = "2026-11"

_TABLE_KINDS = {"openai": "openai", "anthropic": "anthropic"}


@dataclass(frozen=True)
class Where:
    """A configured provider as the price lookup sees it."""

    name: str
    kind: str
    base_url: str = ""


@dataclass(frozen=True)
class Priced:
    """A call's cost in nano-dollars (None: unpriced) and where its price came from."""

    cost: int | None
    source: str  # "profile" | "table" | "" (unpriced)


def table_description() -> str:
    return f"{TABLE_PACKAGE} {TABLE_VERSION} (prices as of {TABLE_DATE})"


class PriceBook:
    """The prices of one profile: its overrides, and the table behind them."""

    def __init__(self, overrides: Mapping[str, ModelPrice], providers: Mapping[str, Where]) -> None:
        self._overrides = dict(overrides)
        self._providers = dict(providers)
        self._lock = threading.Lock()
        self._output_rates: dict[tuple[str, str], float | None] = {}

    def _override(self, provider: str, model: str) -> ModelPrice | None:
        return self._overrides.get(f"{provider}/{model}") or self._overrides.get(provider)

    # -- one call's cost ---------------------------------------------------------------------------------
    async def price(self, provider: str, model: str, usage: Usage | None) -> Priced:
        """What ``usage`` cost on ``provider``/``model``; the table is read on a worker thread."""
        if usage is None:
            return Priced(None, "")
        own = self._override(provider, model)
        if own is not None:
            return Priced(cost_nano(usage, own), "profile")
        where = self._providers.get(provider)
        if where is None or where.kind not in _TABLE_KINDS:
            return Priced(None, "")
        cost = await asyncio.to_thread(self._table_cost, where, model, usage)
        return Priced(cost, "table" if cost is not None else "")

    def price_now(self, provider: str, model: str, usage: Usage | None) -> Priced:
        """:meth:`price` on the caller's thread (a worker thread: never the event loop)."""
        if usage is None:
            return Priced(None, "")
        own = self._override(provider, model)
        if own is not None:
            return Priced(cost_nano(usage, own), "profile")
        where = self._providers.get(provider)
        if where is None or where.kind not in _TABLE_KINDS:
            return Priced(None, "")
        cost = self._table_cost(where, model, usage)
        return Priced(cost, "table" if cost is not None else "")

    # -- the worst case of a call (budgets, Y2) ----------------------------------------------------------
    async def worst_case(self, provider: str, model: str, max_output_tokens: int) -> int | None:
        """The most a call's output can cost, in nano-dollars; None for an unpriced model."""
        rate = await self.output_rate(provider, model)
        return None if rate is None else worst_case_nano(max_output_tokens, rate)

    async def output_rate(self, provider: str, model: str) -> float | None:
        own = self._override(provider, model)
        if own is not None:
            return own.output
        key = (provider, model)
        if key in self._output_rates:  # the hot path: no thread hop once known
            return self._output_rates[key]
        rate = await asyncio.to_thread(self._table_output_rate, provider, model)
        self._output_rates[key] = rate
        return rate

    def _table_output_rate(self, provider: str, model: str) -> float | None:
        where = self._providers.get(provider)
        if where is None or where.kind not in _TABLE_KINDS:
            return None
        cost = self._table_cost(where, model, Usage(output=1_000_000))
        return None if cost is None else cost / NANO_PER_USD

    # -- the table ---------------------------------------------------------------------------------------
    def _table_cost(self, where: Where, model: str, usage: Usage) -> int | None:
        """On a worker thread: the table's price of ``usage``, or None when it has none for the model."""
        with self._lock:  # one import, one lookup at a time (the table's caches are plain dicts)
            try:
                calc = _table_calc(where, model, usage)
            except LookupError:
                return None
            except Exception as exc:  # a table that cannot price this usage: unpriced, and said in the log
                log.warning("no price for %s/%s: %s", where.name, model, exc)
                return None
        return int((calc * NANO_PER_USD).to_integral_value())


def _table_calc(where: Where, model: str, usage: Usage) -> Decimal:
    import genai_prices  # imported here, on a worker thread: about a second

    table_usage = genai_prices.Usage(
        # The table's input counts the cached part too (cache reads and writes are parts of it).
        input_tokens=usage.input + usage.cache_read + usage.cache_write,
        output_tokens=usage.output,
        cache_read_tokens=usage.cache_read,
        cache_write_tokens=usage.cache_write,
    )
    kwargs: dict[str, Any] = {}
    url = where.base_url.strip()
    if url and _table_knows_url(url):
        kwargs["provider_api_url"] = url
    else:
        kwargs["provider_id"] = _TABLE_KINDS[where.kind]
    calc = genai_prices.calc_price(table_usage, model, **kwargs)
    return Decimal(calc.total_price)


def _table_knows_url(url: str) -> bool:
    from genai_prices import data_snapshot

    try:
        data_snapshot.get_snapshot().find_provider(None, None, url)
    except LookupError:
        return False
    return True


def price_book_from(prices: Mapping[str, ModelPrice], providers: Mapping[str, Any]) -> PriceBook:
    """A profile's book: ``providers`` maps names to settings with ``kind`` and ``base_url``."""
    where = {name: Where(name, str(s.kind), str(getattr(s, "base_url", "") or "")) for name, s in providers.items()}
    return PriceBook(prices, where)
