"""Benchmark of schedules (SPEC K1).

    .venv/bin/python -m bench.background_bench [--schedules 1000] [--claims 500] [--starts 5] [--control]

Measures, on real SQLite stores in a temporary folder:
1. next-fire computation: ``next_after`` for a cron schedule in a zone with DST and for an interval
   (microseconds per call);
2. claim cost per run: ``claim_run`` (the claim row, a new Background session and its queued prompt in
   one durable transaction), beside ``create_session`` + ``add_submission`` as two transactions;
3. Gateway start with 1,000 schedules against none (target: at most +50 ms): the real Gateway process
   (``python -m anyy.gateway``, what ``anyy gateway start`` spawns) from spawn to ready, and its CPU time
   over its life (read with ``wait4``: far less moved by other processes than the wall time), ``--starts``
   pairs in alternating order, reported as medians and as the median of the paired differences
   (``--control`` adds an A/A run of two empty homes, to show the noise); and in process, what start
   does that schedules could slow (store, recovery, the scheduler's start and first round), the same way.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import select
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple
from zoneinfo import ZoneInfo

from anyy.domain.queue import NewSubmission
from anyy.domain.schedule_records import NewSchedule, RunClaim
from anyy.domain.schedules import Timing, next_after
from anyy.domain.sessions import NewSession, Origin
from anyy.profiles import create_profile
from anyy.runtime.assembly import build_deps
from anyy.runtime.runtime import Runtime
from anyy.runtime.schedule_admin import scheduling_for
from anyy.storage.sqlite import SqliteStore

TARGET_START_MS = 50.0
CRON = Timing(kind="cron", cron="*/15 8-18 * * 1-5", timezone="Europe/Paris")
EVERY = Timing(kind="interval", every=3600.0, start=1_790_000_000.0)


def bench_next_fire(n: int = 2000) -> dict[str, float]:
    zone = ZoneInfo("Europe/Paris")
    figures = {}
    for label, timing in (("cron", CRON), ("interval", EVERY)):
        moment = 1_790_000_000.0
        started = time.perf_counter()
        for _ in range(n):
            found = next_after(timing, zone, moment)
            assert found is not None
            moment = found
        figures[label] = (time.perf_counter() - started) / n * 1e6
    return figures


def bench_claims(folder: Path, claims: int) -> dict[str, float]:
    store = SqliteStore(folder / "claims.db", objects_dir=folder / "objects")
    try:
        made = store.create_schedule(NewSchedule(name="bench", timing=CRON, prompt="p"))
        started = time.perf_counter()
        for i in range(claims):
            at = 1_790_000_000.0 + i * 900
            origin = Origin(kind="schedule", name="bench", schedule_id=made.id, scheduled_for=at)
            claim = RunClaim(
                schedule_id=made.id,
                scheduled_for=at,
                considered=at,
                next_at=at + 900,
                prompt=NewSubmission(text="p"),
                session=NewSession(kind="background", title="bench", origin=origin),
            )
            assert store.claim_run(claim) is not None
        claim_ms = (time.perf_counter() - started) / claims * 1e3
        started = time.perf_counter()
        for _ in range(claims):
            session = store.create_session(NewSession(kind="background", title="bench"))
            store.add_submission(session.id, NewSubmission(text="p"))
        plain_ms = (time.perf_counter() - started) / claims * 1e3
        started = time.perf_counter()
        for i in range(claims):  # a second claim of a run: found taken, nothing written
            assert store.claim_run(_taken_claim(made.id, i)) is None
        taken_ms = (time.perf_counter() - started) / claims * 1e3
    finally:
        store.close()
    return {"claim_ms": claim_ms, "session_and_prompt_ms": plain_ms, "taken_claim_ms": taken_ms}


def _taken_claim(schedule_id: str, i: int) -> RunClaim:
    at = 1_790_000_000.0 + i * 900
    return RunClaim(
        schedule_id=schedule_id,
        scheduled_for=at,
        considered=at,
        next_at=at + 900,
        prompt=NewSubmission(text="p"),
        session_id="ses_unused",
    )


def make_home(folder: Path, schedules: int, copy: str = "") -> Path:
    home = folder / f"home-{schedules}{copy}"
    profile = create_profile(home, "default")
    store = SqliteStore.open_profile(profile.path, profile="default")
    try:
        for i in range(schedules):
            store.create_schedule(
                NewSchedule(name=f"s{i:04d}", timing=CRON, prompt="p", considered=time.time(), next_at=4e9)
            )
    finally:
        store.close()
    return home


class Start(NamedTuple):
    wall_ms: float  # spawn to ready
    cpu_ms: float  # the process's own CPU time (user + system) over its whole life: start, then stop


def gateway_start(home: Path) -> Start:
    """Spawn to ready of the real Gateway process, then stop it (SIGTERM) and read its CPU time."""
    read_end, write_end = os.pipe()
    env = {**os.environ, "ANYY_HOME": str(home)}
    started = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "anyy.gateway", "--profile", "default", "--ready-fd", str(write_end)],
        pass_fds=(write_end,),
        env=env,
        cwd=home,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    os.close(write_end)
    try:
        ready, _, _ = select.select([read_end], [], [], 60)
        assert ready, "the Gateway did not start"
        assert os.read(read_end, 4096), "the Gateway did not start"
        elapsed = (time.perf_counter() - started) * 1e3
    finally:
        os.close(read_end)
        proc.terminate()
    _pid, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return Start(elapsed, (usage.ru_utime + usage.ru_stime) * 1e3)


def process_starts(none: Path, many: Path, starts: int) -> tuple[list[Start], list[Start]]:
    """``starts`` pairs, the order alternating (the second start of a pair was slower on this VM)."""
    empty: list[Start] = []
    full: list[Start] = []
    for i in range(starts):
        pair = ((none, empty), (many, full))
        for home, into in pair if i % 2 == 0 else reversed(pair):
            into.append(gateway_start(home))
    return empty, full


def report_process(label: str, empty: list[Start], full: list[Start]) -> None:
    """Medians of each, and the median of the paired differences (a pair ran back to back, so a load that
    drifts over minutes cancels out of it), for the wall time to ready and for the CPU time."""
    for what, pick in (("spawn to ready", lambda s: s.wall_ms), ("CPU time (user+sys)", lambda s: s.cpu_ms)):
        base = statistics.median(map(pick, empty))
        loaded = statistics.median(map(pick, full))
        paired = statistics.median(pick(b) - pick(a) for a, b in zip(empty, full, strict=True))
        fastest = min(map(pick, full)) - min(map(pick, empty))
        verdict = "met" if paired <= TARGET_START_MS else "MISSED"
        print(
            f"{label}, {what}, {len(empty)} pairs: none {base:.0f} ms, with them {loaded:.0f} ms; "
            f"median of paired differences {paired:+.1f} ms (target ≤ +{TARGET_START_MS:.0f} ms: {verdict}); "
            f"fastest of each {fastest:+.1f} ms"
        )


async def in_process_start_ms(home: Path) -> float:
    """What the Gateway does at start that schedules could slow, in process: open the store (migrations),
    recover, start the scheduler (runs left pending) and finish its first round (the catch-up)."""
    from anyy.profiles import get_profile

    profile = get_profile(home, "default")
    started = time.perf_counter()
    deps = build_deps(profile, workdir=home)
    deps.owner.start()
    runtime = Runtime(deps)
    try:
        await runtime.start()
        schedules = scheduling_for(profile, runtime)
        await schedules.scheduler.start()
        await schedules.scheduler.next_tick()
        elapsed = (time.perf_counter() - started) * 1e3
        await schedules.scheduler.aclose()
    finally:
        await runtime.aclose()
        await deps.owner.aclose()
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--schedules", type=int, default=1000)
    parser.add_argument("--claims", type=int, default=500)
    parser.add_argument("--starts", type=int, default=5)
    parser.add_argument("--control", action="store_true", help="also an A/A run: two empty homes, paired alike")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        fire = bench_next_fire()
        print(f"next fire time, cron in Europe/Paris: {fire['cron']:.1f} µs/call; interval: {fire['interval']:.2f} µs")
        claims = bench_claims(folder, args.claims)
        print(
            f"claim per run (claim row + session + queued prompt, one transaction): {claims['claim_ms']:.3f} ms; "
            f"session + prompt as two transactions: {claims['session_and_prompt_ms']:.3f} ms; "
            f"a claim found taken: {claims['taken_claim_ms']:.3f} ms"
        )
        none, many = make_home(folder, 0), make_home(folder, args.schedules)
        empty, full = process_starts(none, many, args.starts)
        report_process(f"Gateway process, none vs {args.schedules} schedules", empty, full)
        if args.control:  # A/A: two copies of the empty home; what the noise alone gives
            twin = make_home(folder, 0, "b")
            report_process("A/A control, two empty homes", *process_starts(none, twin, args.starts))
        empty_in: list[float] = []
        full_in: list[float] = []
        for i in range(max(args.starts, 5)):
            pair_in = ((none, empty_in), (many, full_in))
            for home, into in pair_in if i % 2 == 0 else reversed(pair_in):
                into.append(asyncio.run(in_process_start_ms(home)))
        base_in, loaded_in = statistics.median(empty_in), statistics.median(full_in)
        delta_in = loaded_in - base_in
        verdict_in = "met" if delta_in <= TARGET_START_MS else "MISSED"
        print(
            f"in process (store open, recovery, scheduler start and first round), median: none {base_in:.1f} ms, "
            f"{args.schedules} schedules {loaded_in:.1f} ms: {delta_in:+.1f} ms (target ≤ +{TARGET_START_MS:.0f} ms: "
            f"{verdict_in})"
        )


if __name__ == "__main__":
    main()
