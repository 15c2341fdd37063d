"""Benchmark of ameesh's own cost per turn and of 50 agents at once, with the scripted fake harness.

    .venv/bin/python -m bench.ameesh_bench [--turns 50] [--agents 50] [--cli-turns 20] [--slow-seconds 3]
        [--real-turns 20] [--real claude,codex,pi,dsh]

In a temporary AMEESH_HOME (and FAKE_HARNESS_HOME under it):
1. ``--turns`` turns of one agent through the runner that ``ameesh run`` uses (``Registry.send`` then
   ``Runner.run()`` until the inbox is empty), interleaved with as many turns of the fake harness program
   called directly: the same argv (``--session-id`` on the first turn, ``--resume`` after), the same
   environment, the same ``asyncio.create_subprocess_exec`` start (own process group, pipes), its JSON
   read. ameesh's overhead per turn = ameesh turn - direct turn of the same pair; median and p90
   (target: median <= 50 ms). Also reported: a turn through the command line (``ameesh send`` + ``ameesh
   run``, two process starts), over ``--cli-turns`` turns.
2. ``--agents`` agents with one message each played by one ``Runner.run()``: turns per second; then the
   same with one agent scripted to hang (``FAKE_HARNESS_SCRIPT`` rule ``hang``) and a canon of its own with
   ``turn_timeout = --slow-seconds``: the other agents' turns must all end long before the slow one
   (target: the others are not delayed: the last of them ends within 1.25x of the last end when all are fast,
   and before the slow turn is cut).
3. The real harnesses (Claude Code, Codex CLI, pi, DeepSeek Harness at the pinned versions of
   scripts/setup-harnesses),
   each against the fake model server of the tests (tests/fakes): ``--real-turns`` turns of one agent
   through the runner interleaved with as many direct calls of the same CLI (same argv and environment) on a
   session of its own that grows alike; overhead = pairwise difference, median and p90.

Nothing is warmed up: every turn starts its harness process from scratch, as ``ameesh run`` does.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from ameesh import paths
from ameesh.harnesses import Harness, TurnRequest, TurnResult
from ameesh.harnesses.fake import FakeHarness
from ameesh.registry import Registry
from ameesh.runner import Runner

AMEESH = str(Path(sys.executable).parent / "ameesh")
OVERHEAD_TARGET_MS = 50.0
ISOLATING_ENV = (
    "AMEESH_CANON",
    "AMEESH_SESSION_POLICY",
    "AMEESH_SESSION_MAX_TOKENS",
    "AMEESH_SESSION_MAX_TURN_SECONDS",
    "AMEESH_SESSION_MIN_TURNS",
    "FAKE_HARNESS_HOME",
    "FAKE_HARNESS_SCRIPT",
)


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def _use_home(home: Path) -> None:
    """Point ameesh (and the fake harness, through it) at ``home``."""
    os.environ["AMEESH_HOME"] = str(home)
    home.mkdir(parents=True, exist_ok=True)


def _add(reg: Registry, root: Path, name: str, workdir: Path) -> None:
    """What ``ameesh add NAME --harness fake --dir WORKDIR`` records (outside a git repository)."""
    reg.add_agent(name, harness="fake", role="build", workdir=str(workdir), git_common_dir=None, git_branch=None)
    paths.agent_dir(root, name).mkdir(parents=True, exist_ok=True)


# -- 1. overhead per turn ----------------------------------------------------------------------------------


async def _direct_turn(prompt: str, cwd: Path, sid: str, new: bool) -> float:
    """One turn of the fake harness program called directly, the way a script would: start, wait, read."""
    request = TurnRequest(prompt=prompt, cwd=cwd, session_id=sid, new_session=new)
    elapsed, _ = await _direct_real(FakeHarness(), request)
    return elapsed


def _ameesh_turn(reg: Registry, root: Path, name: str, prompt: str) -> float:
    began = time.perf_counter()
    reg.send(name, prompt, None)
    report = asyncio.run(Runner(reg, root).run())
    elapsed = time.perf_counter() - began
    if report.turns != 1 or report.failed:
        raise SystemExit(f"ameesh turn failed: {report}")
    return elapsed * 1000


def _cli(argv: list[str]) -> float:
    began = time.perf_counter()
    done = subprocess.run([AMEESH, *argv], capture_output=True, check=False)
    elapsed = time.perf_counter() - began
    if done.returncode != 0:
        raise SystemExit(f"ameesh {' '.join(argv)} failed ({done.returncode}): {done.stderr.decode()}")
    return elapsed * 1000


def overhead(tmp: Path, turns: int, cli_turns: int) -> tuple[list[float], list[float], list[float]]:
    home, work = tmp / "overhead" / "home", tmp / "overhead" / "work"
    work.mkdir(parents=True)
    _use_home(home)
    ours: list[float] = []
    direct: list[float] = []
    with Registry(paths.registry_path(home)) as reg:
        _add(reg, home, "bench", work)
        sid = str(uuid.uuid4())
        for turn in range(turns):
            prompt = f"turn {turn}: a prompt of an ordinary length, asking for the next step of the work"
            # alternate which goes first, so that drift on the machine falls on both alike
            if turn % 2:
                direct.append(asyncio.run(_direct_turn(prompt, work, sid, new=turn == 0)))
                ours.append(_ameesh_turn(reg, home, "bench", prompt))
            else:
                ours.append(_ameesh_turn(reg, home, "bench", prompt))
                direct.append(asyncio.run(_direct_turn(prompt, work, sid, new=turn == 0)))
        answers = [t.result or "" for t in reg.turns("bench")]
        if not answers[-1].startswith(f"RESUMED ({turns - 1} earlier turns)"):
            raise SystemExit(f"the agent did not resume its session: {answers[-1]!r}")

    cli: list[float] = []
    _add_cli = ["add", "cli", "--harness", "fake", "--dir", str(work)]
    _cli(_add_cli)
    for turn in range(cli_turns):
        began = time.perf_counter()
        _cli(["send", "cli", f"turn {turn}: a prompt of an ordinary length, asking for the next step of the work"])
        _cli(["run"])
        cli.append((time.perf_counter() - began) * 1000)
    return ours, direct, cli


# -- 2. many agents at once -------------------------------------------------------------------------------


def crowd(tmp: Path, label: str, agents: int, slow_seconds: float | None) -> tuple[float, dict[str, float], str]:
    """One ``Runner.run()`` over ``agents`` agents with one message each: wall time, each agent's end, slow outcome."""
    home, work = tmp / label / "home", tmp / label / "work"
    work.mkdir(parents=True)
    _use_home(home)
    os.environ.pop("FAKE_HARNESS_SCRIPT", None)
    names = [f"agent{n:02d}" for n in range(agents)]
    with Registry(paths.registry_path(home)) as reg:
        for name in names:
            _add(reg, home, name, work)
        if slow_seconds is not None:
            slow_work = tmp / label / "slow-work"
            (slow_work / ".ameesh").mkdir(parents=True)
            (slow_work / ".ameesh" / "canon.toml").write_text(
                f"[thresholds]\nturn_timeout = {slow_seconds}\nmax_attempts = 1\n", encoding="utf-8"
            )
            reg.update_agent(names[0], workdir=str(slow_work))
            script = tmp / label / "script.json"
            script.write_text(json.dumps({"rules": [{"match": "SLOW", "hang": True}]}), encoding="utf-8")
            os.environ["FAKE_HARNESS_SCRIPT"] = str(script)
        for name in names:
            reg.send(name, f"{'SLOW ' if slow_seconds is not None and name == names[0] else ''}hello {name}", None)
        began_wall, began = time.time(), time.perf_counter()
        report = asyncio.run(Runner(reg, home).run())
        wall = time.perf_counter() - began
        ends = {}
        outcome = ""
        for name in names:
            (turn,) = reg.turns(name)
            ends[name] = turn.at - began_wall
            if slow_seconds is not None and name == names[0]:
                outcome = turn.outcome
            elif turn.outcome != "ok":
                raise SystemExit(f"{name}: turn {turn.outcome}: {turn.error}")
    os.environ.pop("FAKE_HARNESS_SCRIPT", None)
    expected_failed = 1 if slow_seconds is not None else 0
    if report.turns != agents - expected_failed or report.failed != expected_failed:
        raise SystemExit(f"{label}: unexpected report {report}")
    return wall, ends, outcome


# -- 3. real harnesses --------------------------------------------------------------------------------------


async def _direct_real(harness: Harness, request: TurnRequest) -> tuple[float, TurnResult]:
    """One turn of a real harness called directly: its argv and environment, started, waited for, judged."""
    began = time.perf_counter()
    proc = await asyncio.create_subprocess_exec(
        *harness.command(request),
        cwd=request.cwd,
        env={**os.environ, **harness.environment()},
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,
    )
    out, err = await proc.communicate()
    elapsed = time.perf_counter() - began
    result = harness.parse(request, proc.returncode or 0, out.decode(), err.decode())
    if not result.ok:
        raise SystemExit(f"direct {harness.name} turn failed: {result.error}")
    return elapsed * 1000, result


def real_overhead(tmp: Path, name: str, turns: int, bin_dir: Path) -> tuple[list[float], list[float]]:
    """``turns`` turns of one agent on the real harness ``name`` through the runner, interleaved with as many
    direct calls of the same harness on a session of their own (growing alike), against the fake model
    server; the harness's own start-up (Node.js, 0.7-3 s) dominates both."""
    from tests.fakes.harness_env import MODELS, harness_env
    from tests.fakes.harness_replies import ConversationResponder
    from tests.fakes.model_server import FakeModelServer

    from ameesh import harnesses

    server = FakeModelServer(ConversationResponder())
    server.start()
    saved = dict(os.environ)
    try:
        base = tmp / f"real-{name}"
        home, work, user = base / "ameesh", base / "work", base / "user"
        work.mkdir(parents=True)
        user.mkdir()
        subprocess.run(["git", "init", "-q", str(work)], check=True)
        os.environ.update(harness_env(name, server, user, bin_dir))
        _use_home(home)
        ours: list[float] = []
        direct: list[float] = []
        with Registry(paths.registry_path(home)) as reg:
            reg.add_agent(name, harness=name, role="build", workdir=str(work), git_common_dir=None, git_branch=None)
            reg.update_agent(name, model=MODELS[name], session_policy="jamais")
            harness = harnesses.get(name, base / "direct-state")
            sid = harness.new_session_id()
            for turn in range(turns):
                prompt = f"turn {turn}: a prompt of an ordinary length, asking for the next step of the work"
                request = TurnRequest(
                    prompt=prompt, cwd=work, session_id=sid, new_session=turn == 0, model=MODELS[name]
                )

                def play_direct(request: TurnRequest = request) -> None:
                    nonlocal sid
                    elapsed, result = asyncio.run(_direct_real(harness, request))
                    direct.append(elapsed)
                    sid = result.session_id or sid  # Codex chooses its thread id on the first turn

                if turn % 2:
                    play_direct()
                    ours.append(_ameesh_turn(reg, home, name, prompt))
                else:
                    ours.append(_ameesh_turn(reg, home, name, prompt))
                    play_direct()
            last = reg.turns(name)[-1].result or ""
            if not last.startswith(f"ANSWER {turns}:"):
                raise SystemExit(f"{name}: the agent did not resume its session: {last!r}")
        return ours, direct
    finally:
        os.environ.clear()
        os.environ.update(saved)
        server.stop()


# -- report -------------------------------------------------------------------------------------------------


CLI_TARGETS_MS = {"--help": 150.0, "status": 150.0, "send": 200.0}  # H18


def cli_start(tmp: Path, runs: int) -> dict[str, list[float]]:
    """H18: wall time of ``python -c pass`` and of ``ameesh --help``, ``ameesh status`` and ``ameesh send``
    (each a new process, as a person or a script runs them), interleaved, ``runs`` times each."""
    home = tmp / "cli-home"
    env = {**os.environ, "AMEESH_HOME": str(home)}
    ameesh = [sys.executable, "-c", "import sys; from ameesh.cli import main; sys.argv[0] = 'ameesh'; main()"]
    work = tmp / "cli-work"
    work.mkdir()
    subprocess.run(
        [*ameesh, "add", "ann", "--harness", "fake", "--dir", str(work)], env=env, check=True, capture_output=True
    )
    commands = {
        "python -c pass": [sys.executable, "-c", "pass"],
        "--help": [*ameesh, "--help"],
        "status": [*ameesh, "status"],
        "send": [*ameesh, "send", "ann", "a message"],
    }
    times: dict[str, list[float]] = {label: [] for label in commands}
    for _ in range(runs):
        for label, argv in commands.items():
            started = time.perf_counter()
            subprocess.run(argv, env=env, check=True, capture_output=True)
            times[label].append((time.perf_counter() - started) * 1000)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=50)
    parser.add_argument("--agents", type=int, default=50)
    parser.add_argument("--cli-turns", type=int, default=20)
    parser.add_argument("--slow-seconds", type=float, default=3.0)
    parser.add_argument("--real-turns", type=int, default=20, help="turns per real harness (0: skip them)")
    parser.add_argument("--real", default="claude,codex,pi,dsh", help="the real harnesses to measure (comma list)")
    parser.add_argument("--cli-runs", type=int, default=30, help="starts of each command (H18; 0: skip)")
    parser.add_argument("--only-cli", action="store_true", help="measure the command starts only (H18)")
    args = parser.parse_args()
    for var in ISOLATING_ENV:
        os.environ.pop(var, None)

    if args.cli_runs:
        with tempfile.TemporaryDirectory(prefix="ameesh-bench-cli-") as tmp_name:
            times = cli_start(Path(tmp_name), args.cli_runs)
        print(f"0. command starts (H18), {args.cli_runs} runs each, interleaved: median, p90")
        for label, values in times.items():
            target = CLI_TARGETS_MS.get(label)
            verdict = (
                ""
                if target is None
                else (f"  target <= {target:g} ms  {'met' if statistics.median(values) <= target else 'MISSED'}")
            )
            name = label if label.startswith("python") else f"ameesh {label}"
            print(f"  {name:<16} {statistics.median(values):6.1f} ms  {_percentile(values, 0.9):6.1f} ms{verdict}")
        if args.only_cli:
            return

    with tempfile.TemporaryDirectory(prefix="ameesh-bench-") as tmp_name:
        tmp = Path(tmp_name)
        ours, direct, cli = overhead(tmp, args.turns, args.cli_turns)
        diffs = [a - d for a, d in zip(ours, direct, strict=True)]
        median_overhead, p90_overhead = statistics.median(diffs), _percentile(diffs, 0.9)
        print(f"1. one agent, {args.turns} turns with the fake harness (interleaved, nothing warmed up)")
        print(
            f"  through the runner (send + Runner.run): median {statistics.median(ours):.1f} ms,"
            f" p90 {_percentile(ours, 0.9):.1f} ms"
        )
        print(
            f"  the fake harness called directly:       median {statistics.median(direct):.1f} ms,"
            f" p90 {_percentile(direct, 0.9):.1f} ms"
        )
        verdict = "met" if median_overhead <= OVERHEAD_TARGET_MS else "MISSED"
        print(
            f"  ameesh's overhead per turn (pairwise):  median {median_overhead:.1f} ms, p90 {p90_overhead:.1f} ms"
            f"  target: median <= {OVERHEAD_TARGET_MS:g} ms  {verdict}"
        )
        cli_over = statistics.median(cli) - statistics.median(direct)
        print(
            f"  through the command line (ameesh send + ameesh run, {args.cli_turns} turns): median"
            f" {statistics.median(cli):.1f} ms, i.e. {cli_over:.1f} ms over a direct call (two process starts;"
            " `ameesh run --watch` pays them once)"
        )

        wall, ends, _ = crowd(tmp, "crowd", args.agents, None)
        all_fast_last = max(ends.values())
        print(f"2. {args.agents} agents, one message each, one runner")
        print(
            f"  all fast: {args.agents} turns in {wall:.2f} s = {args.agents / wall:.1f} turns/s"
            f" (turn ends: median {statistics.median(ends.values()):.2f} s, last {all_fast_last:.2f} s)"
        )
        wall, ends, outcome = crowd(tmp, "crowd-slow", args.agents, args.slow_seconds)
        slow_name = min(ends)
        slow = ends.pop(slow_name)
        fast_last = max(ends.values())
        # Not delayed: the others end as they do when nobody hangs (25% margin for a loaded machine), and
        # before the slow turn is cut.
        limit = min(all_fast_last * 1.25, slow)
        verdict = "met" if fast_last <= limit else "MISSED"
        print(
            f"  one agent hangs (killed by its turn_timeout of {args.slow_seconds:g} s, outcome {outcome}):"
            f" the {len(ends)} others: median end {statistics.median(ends.values()):.2f} s,"
            f" last {fast_last:.2f} s = {len(ends) / fast_last:.1f} turns/s; the slow one ends at {slow:.2f} s"
            f" (run: {wall:.2f} s)"
        )
        print(
            f"  target: the others are not delayed by the slow one: they end as when all are fast"
            f" (<= {limit:.2f} s, i.e. 1.25 x {all_fast_last:.2f} s)  {verdict}"
        )

    print(f"3. real harnesses, {args.real_turns} turns each against the fake model server (interleaved)")
    from tests.fakes.harness_env import HARNESSES, harness_bin

    if args.real_turns == 0:
        print("  skipped (--real-turns 0)")
        return
    with tempfile.TemporaryDirectory(prefix="ameesh-bench-real-") as tmp_name:
        for name in [n for n in args.real.split(",") if n in HARNESSES]:
            bin_dir = harness_bin(name)
            if bin_dir is None:
                print(f"  {name:<7} not measured: not installed (bash scripts/setup-harnesses)")
                continue
            ours, direct = real_overhead(Path(tmp_name), name, args.real_turns, bin_dir)
            diffs = [a - d for a, d in zip(ours, direct, strict=True)]
            verdict = "met" if statistics.median(diffs) <= OVERHEAD_TARGET_MS else "MISSED"
            print(
                f"  {name:<7} direct: median {statistics.median(direct):7.1f} ms;"
                f" through ameesh: median {statistics.median(ours):7.1f} ms;"
                f" overhead (pairwise): median {statistics.median(diffs):6.1f} ms,"
                f" p90 {_percentile(diffs, 0.9):6.1f} ms  {verdict}"
            )


if __name__ == "__main__":
    main()
