"""Reporting for the store benchmark: result rows, formatting, timing helpers, the final table, and the
meter of other CPU load on the machine."""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Row:
    figure: str
    ours: str
    target: str
    verdict: str
    peer: str = "-"


@dataclass
class Report:
    rows: list[Row] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)

    def add(self, row: Row) -> None:
        self.rows.append(row)
        print(f"  => {row.figure}: {row.ours}   target {row.target}   {row.verdict}   peer {row.peer}")


def say(text: str) -> None:
    print(text, flush=True)


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.3g} ms" if seconds < 10 else f"{seconds:.1f} s"


def rate(count: int, seconds: float) -> float:
    return count / seconds if seconds > 0 else float("inf")


def verdict_at_most(value: float, target: float) -> str:
    ratio = value / target
    return f"{ratio:.2f}x of limit: {'met' if ratio <= 1 else 'MISSED'}"


def verdict_at_least(value: float, target: float) -> str:
    ratio = value / target
    return f"{ratio:.2f}x of target: {'met' if ratio >= 1 else 'MISSED'}"


def timed(call: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    result = call()
    return time.perf_counter() - start, result


def spread(samples: Sequence[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "median": statistics.median(ordered),
        "min": ordered[0],
        "p90": ordered[min(len(ordered) - 1, int(len(ordered) * 0.9))],
        "max": ordered[-1],
        "n": len(ordered),
    }


# -- other load on the machine -----------------------------------------------------------------------------
class LoadMeter:
    """CPU time spent by everything but this process, as a fraction of the machine, since ``start``."""

    def __init__(self) -> None:
        self.tick = os.sysconf("SC_CLK_TCK")
        self.cpus = os.cpu_count() or 1
        self.start()

    @staticmethod
    def _busy_jiffies() -> int:
        with open("/proc/stat", encoding="ascii") as handle:
            fields = [int(v) for v in handle.readline().split()[1:]]
        idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
        return sum(fields[:8]) - idle

    def start(self) -> None:
        self.t0 = time.perf_counter()
        self.busy0 = self._busy_jiffies()
        times = os.times()
        self.own0 = times.user + times.system

    def other_load(self) -> float:
        elapsed = time.perf_counter() - self.t0
        busy = (self._busy_jiffies() - self.busy0) / self.tick
        times = os.times()
        own = times.user + times.system - self.own0
        return max(0.0, (busy - own) / (elapsed * self.cpus)) if elapsed > 0 else 0.0


def wait_until_quiet(limit_seconds: float, threshold: float = 0.05) -> float:
    """Sample the other load for 2 s at a time until it is under ``threshold`` or the time is up."""
    meter = LoadMeter()
    deadline = time.monotonic() + limit_seconds
    while True:
        meter.start()
        time.sleep(2)
        load = meter.other_load()
        if load < threshold or time.monotonic() >= deadline:
            return load
        say(f"  the machine is busy ({load:.0%} of its CPUs used by other processes); waiting...")


def print_table(rows: Sequence[Row]) -> None:
    headers = ("figure", "ours", "target", "ratio/verdict", "peer")
    cells = [headers, *((r.figure, r.ours, r.target, r.verdict, r.peer) for r in rows)]
    widths = [max(len(c[i]) for c in cells) for i in range(len(headers))]
    line = "-+-".join("-" * w for w in widths)
    print()
    print(" | ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)))
    print(line)
    for cell in cells[1:]:
        print(" | ".join(c.ljust(w) for c, w in zip(cell, widths, strict=True)))
