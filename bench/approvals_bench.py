"""Benchmark of the approval decision (SPEC N2, N7): parse a shell line and decide, per call.

    .venv/bin/python -m bench.approvals_bench [--rounds 50] [--long 200]

Over the adversarial corpus of the tests (tests/security/shell_corpus.toml, its own rules), each line is
decided ``--rounds`` times through :func:`anyy.tools.approvals.gate`, the function the runtime calls before
every tool call (tree-sitter parse, the walk, the patterns, the request text); every call is timed on its
own. Reported: p50, p99, the p99 over lines of each line's median (what a busy machine's preemption does not
reach) and the worst line's median (target: p99 <= 1 ms); the load average says how busy the machine was.
Also: a long line (``--long`` commands joined with ``&&``), a path decision (canonical path: one
realpath) and a whole-tool ``allow`` (no parse). Raw reference: tree-sitter's parse alone of the same lines.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
import tomllib
from collections.abc import Callable
from functools import partial
from pathlib import Path

from anyy.tools.approval_rules import ApprovalRules
from anyy.tools.approvals import gate
from anyy.tools.shell_commands import _parser

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "security" / "shell_corpus.toml"


CPU: list[float] = []  # the same calls' CPU time (what the machine's other processes do not inflate)


def _times(call: Callable[[], object], rounds: int) -> list[float]:
    out = []
    for _ in range(rounds):
        cpu = time.process_time_ns()
        start = time.perf_counter_ns()
        call()
        out.append((time.perf_counter_ns() - start) / 1e6)
        CPU.append((time.process_time_ns() - cpu) / 1e6)
    return out


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=50)
    parser.add_argument("--long", type=int, default=200)
    args = parser.parse_args()
    data = tomllib.loads(CORPUS.read_text(encoding="utf-8"))
    rules = ApprovalRules.from_config(data["rules"])
    lines = [line for cases in data["cases"].values() for line in cases]
    load = os.getloadavg()
    for line in lines:  # warm: imports, the parser of this thread
        gate(rules, "shell", {"command": line})
    every: list[float] = []
    medians: list[float] = []
    worst = (0.0, "")
    raw: list[float] = []
    CPU.clear()
    for line in lines:
        times = _times(partial(gate, rules, "shell", {"command": line}), args.rounds)
        every += times
        medians.append(statistics.median(times))
        worst = max(worst, (statistics.median(times), line))
    cpu = list(CPU)
    for line in lines:
        raw += _times(partial(_parser().parse, line.encode()), args.rounds)
    long_line = " && ".join(f"git status --short src/module_{i}.py" for i in range(args.long))
    CPU.clear()
    long_times = _times(lambda: gate(rules, "shell", {"command": long_line}), args.rounds)
    long_cpu = list(CPU)
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        (work / "src").mkdir()
        path_rules = ApprovalRules.from_config({"write_file": {"src/*": "allow", "*": "ask"}})
        path_times = _times(
            lambda: gate(path_rules, "write_file", {"path": "src/../src/a.py"}, workdir=work), args.rounds * 10
        )
    allow_all = ApprovalRules.from_config({"shell": "allow"})
    allow_times = _times(lambda: gate(allow_all, "shell", {"command": long_line}), args.rounds * 10)

    print(f"load average before/after: {load[0]:.1f} / {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(f"corpus: {len(lines)} lines x {args.rounds} rounds = {len(every)} decisions")
    print(f"shell parse + decide: p50 {_pct(every, 0.5):.3f} ms, p99 {_pct(every, 0.99):.3f} ms (target p99 <= 1 ms)")
    print(f"  CPU time of the same calls: p50 {_pct(cpu, 0.5):.3f} ms, p99 {_pct(cpu, 0.99):.3f} ms")
    print(f"  p99 over the lines of each line's median: {_pct(medians, 0.99):.3f} ms (preemption filtered out)")
    print(f"  worst line (median {worst[0]:.3f} ms): {worst[1][:70]!r}")
    print(f"  raw reference, tree-sitter parse alone: p50 {_pct(raw, 0.5):.3f} ms, p99 {_pct(raw, 0.99):.3f} ms")
    print(
        f"long line ({args.long} commands, {len(long_line)} chars): p50 {_pct(long_times, 0.5):.3f} ms, "
        f"p99 {_pct(long_times, 0.99):.3f} ms; CPU p50 {_pct(long_cpu, 0.5):.3f} ms"
    )
    print(f"path decision (canonical path): p50 {_pct(path_times, 0.5):.3f} ms, p99 {_pct(path_times, 0.99):.3f} ms")
    print(f"shell = allow (no parse): p50 {_pct(allow_times, 0.5):.4f} ms")


if __name__ == "__main__":
    main()
