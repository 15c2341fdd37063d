"""What a model call costs (SPEC Y1): pure arithmetic over the tokens a provider reported.

Money is counted in whole nano-dollars (10⁻⁹ USD): an integer, so that totals over the store are exact sums
(a float would drift over a million calls), small enough for 64-bit columns (9 billion dollars).

A call whose model has no price is *unpriced*: its cost is ``None``, never 0. Zero is a price only when the
user wrote it (``[prices]`` in config.toml, for a local or private model).

Reasoning tokens are part of the output tokens on both APIs (OpenAI's ``completion_tokens`` includes
``reasoning_tokens``; Anthropic's ``output_tokens`` includes thinking) and are billed at the output rate:
they are shown apart and priced with the output.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Annotated

import msgspec

from anyy.domain.entries import Usage

NANO_PER_USD = 1_000_000_000
# A price per million tokens times tokens gives micro-dollars; x1000 nano-dollars.
_NANO_PER_MTOK_TOKEN = 1000

PriceValue = Annotated[float, msgspec.Meta(ge=0, le=100_000)]


class ModelPrice(msgspec.Struct, kw_only=True, forbid_unknown_fields=True, omit_defaults=True):
    """Dollars per million tokens, as a ``[prices."provider/model"]`` table in config.toml writes them.
    A cache rate left out is the input rate (what an API that reports no cache split charges)."""

    input: PriceValue
    output: PriceValue
    cache_read: PriceValue | None = None
    cache_write: PriceValue | None = None


def _nano(tokens: int, per_mtok: float) -> Decimal:
    return Decimal(tokens) * Decimal(repr(per_mtok)) * _NANO_PER_MTOK_TOKEN


def cost_nano(usage: Usage, price: ModelPrice) -> int:
    """The cost of ``usage`` at ``price``, in nano-dollars (rounded half-even once, at the end)."""
    read = price.input if price.cache_read is None else price.cache_read
    write = price.input if price.cache_write is None else price.cache_write
    total = (
        _nano(usage.input, price.input)
        + _nano(usage.output, price.output)
        + _nano(usage.cache_read, read)
        + _nano(usage.cache_write, write)
    )
    return int(total.to_integral_value())


def worst_case_nano(max_output_tokens: int, output_per_mtok: float) -> int:
    """The most a call's answer can add: its output limit at the output rate (the budget check, Y2)."""
    return int(_nano(max_output_tokens, output_per_mtok).to_integral_value())


def usd_to_nano(usd: float) -> int:
    return int((Decimal(repr(usd)) * NANO_PER_USD).to_integral_value())


def format_usd(nano: int | None, *, unpriced: int = 0) -> str:
    """``$0.0123``; ``unpriced`` when nothing was priced; ``$1.20 + 3 unpriced`` when some calls were not."""
    if nano is None:
        return "unpriced"
    usd = Decimal(nano) / NANO_PER_USD
    if usd == 0:
        text = "$0"
    elif abs(usd) >= 1:
        text = f"${usd:,.2f}"
    elif abs(usd) >= Decimal("0.01"):
        text = f"${usd:.3f}"
    else:
        text = f"${usd:.4f}" if abs(usd) >= Decimal("0.0001") else f"${usd:.6f}"
    return f"{text} + {unpriced} unpriced" if unpriced else text


class CostLine(msgspec.Struct, kw_only=True, omit_defaults=True):
    """One group of calls in a usage report: its key (a day, a session id, a model...), how many calls,
    how many of them had no price, their priced total and their tokens."""

    key: str
    calls: int = 0
    unpriced: int = 0
    cost_nano: int = 0
    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    reasoning: int = 0

    @property
    def usd(self) -> str:
        return format_usd(self.cost_nano if self.calls > self.unpriced else None, unpriced=self.unpriced)


USAGE_GROUPS = ("day", "session", "tree", "model", "schedule", "resident", "role", "channel")
