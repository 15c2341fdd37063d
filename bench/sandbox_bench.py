"""Benchmark of what the sandbox adds to a ``shell`` call (SPEC N3, N7; issue 24).

    .venv/bin/python -m bench.sandbox_bench [--calls 100] [--rounds 3]
    PYTHONPATH=/path/to/older/src .venv/bin/python -m bench.sandbox_bench   # the same, on older code

The real ``shell`` tool runs ``true`` ``--calls`` times in a row, once as the machine's sandbox confines it
(``detect_sandbox()``, as a Gateway with the default ``[tools.sandbox]`` would) and once unconfined; the
rounds alternate the two so that a change in the machine's load hits both. Printed: the median and 90th
percentile of one call's wall time per mode (median over the rounds), the CPU time its programs used (the
machine's cost whatever else runs: on a loaded machine the wall time is mostly waiting for a core), and the
differences, the sandbox's own cost per call. Then the same for ``read_file`` on a small file, with and
without the hidden paths (the check the file tools make, N7), which costs each file call a few dozen
``access``/``stat`` calls.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import msgspec

from anyy.tools.base import ToolContext
from anyy.tools.files import ReadFileTool
from anyy.tools.policy import ToolPolicy
from anyy.tools.sandbox import Sandbox, detect_sandbox
from anyy.tools.shell import ShellTool


async def _calls(context: ToolContext, calls: int, *, read: bool = False) -> list[float]:
    tool = ReadFileTool() if read else ShellTool()
    arguments = {"path": "small.txt"} if read else {"command": "true"}
    took: list[float] = []
    for _ in range(calls):
        start = time.perf_counter()
        outcome = await tool.run(arguments, context)
        took.append((time.perf_counter() - start) * 1000)
        if outcome.is_error:
            raise RuntimeError(f"the shell call failed: {outcome.text}")
    return took


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def measure(calls: int, rounds: int) -> dict[str, object]:
    try:
        sandbox = detect_sandbox(anyy_home=Path.home() / ".local" / "share" / "anyy")
    except TypeError:  # the code before issue 24 (PYTHONPATH=<its src>), for the figure before
        sandbox = detect_sandbox()
    if not sandbox.active:
        raise SystemExit(f"no sandbox on this machine: {sandbox.note}")
    with tempfile.TemporaryDirectory(prefix="anyy-sandbox-bench-") as tmp:
        work = Path(tmp)
        (work / "small.txt").write_text("a small file\n" * 10)
        base = ToolContext(workdir=work, memory_dir=work / "memory", session_id="ses_bench", timeout=60)
        modes = {
            "sandboxed": msgspec.structs.replace(base, policy=ToolPolicy(sandbox=sandbox)),
            "unconfined": msgspec.structs.replace(base, policy=ToolPolicy(sandbox=Sandbox())),
        }
        medians: dict[str, list[float]] = {name: [] for name in modes}
        p90s: dict[str, list[float]] = {name: [] for name in modes}
        asyncio.run(_calls(modes["sandboxed"], 3))  # warm: the first call pays imports and the probe
        cpu: dict[str, list[float]] = {name: [] for name in modes}
        for _ in range(rounds):
            for name, context in modes.items():
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                took = asyncio.run(_calls(context, calls))
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                used = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
                cpu[name].append(used * 1000 / calls)
                medians[name].append(statistics.median(took))
                p90s[name].append(_quantile(took, 0.9))
        unhidden = msgspec.structs.replace(sandbox, hidden=()) if hasattr(sandbox, "hidden") else sandbox
        reads = {"read_file_hidden_paths": modes["sandboxed"], "read_file_nothing_hidden": modes["unconfined"]}
        reads["read_file_nothing_hidden"] = msgspec.structs.replace(base, policy=ToolPolicy(sandbox=unhidden))
        for name in reads:
            medians[name], p90s[name] = [], []
        for _ in range(rounds):
            for name, context in reads.items():
                took = asyncio.run(_calls(context, calls * 5, read=True))
                medians[name].append(statistics.median(took))
                p90s[name].append(_quantile(took, 0.9))
    result: dict[str, object] = {"calls": calls, "rounds": rounds, "sandbox": sandbox.note}
    for name, values in medians.items():
        result[f"{name}_ms_median"] = round(statistics.median(values), 2)
        result[f"{name}_ms_p90"] = round(statistics.median(p90s[name]), 2)
    for name, values in cpu.items():
        result[f"{name}_programs_cpu_ms_per_call"] = round(statistics.median(values), 2)
    overhead = statistics.median(medians["sandboxed"]) - statistics.median(medians["unconfined"])
    result["sandbox_overhead_ms"] = round(overhead, 2)
    hiding = statistics.median(medians["read_file_hidden_paths"]) - statistics.median(
        medians["read_file_nothing_hidden"]
    )
    result["hidden_check_ms_per_file_call"] = round(hiding, 3)
    return result


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(None if argv is None else list(argv))
    print(json.dumps(measure(args.calls, args.rounds), indent=2), flush=True)


if __name__ == "__main__":
    main()
