"""Benchmark of schedules (SPEC K1).

    .venv/bin/python -m bench.background_bench [--schedules 1000] [--claims 500] [--starts 5]

Measures, on real SQLite stores in a temporary folder:
1. next-fire computation: ``next_after`` for a cron schedule in a zone with DST and for an interval
   (microseconds per call);
2. claim cost per run: ``claim_run`` (the claim row, a new Background session and its queued prompt in
   one durable transaction), beside ``create_session`` + ``add_submission`` as two transactions;
3. Gateway start with 1,000 schedules against none (target: at most +50 ms): the real Gateway process
   (``python -m anyy.gateway``) from spawn to ready, median of ``--starts`` runs each, in alternating
   order; and in process, what start does that schedules could slow (store, recovery, the scheduler's
   start and first round), the same way.
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


def make_home(folder: Path, schedules: int) -> Path:
    home = folder / f"home-{schedules}"
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


def gateway_start_ms(home: Path) -> float:
    """Spawn to ready of the real Gateway process, then stop it."""
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
        proc.wait(30)
    return elapsed


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
        empty_runs: list[float] = []
        full_runs: list[float] = []
        for i in range(args.starts):  # the order alternates: the second start of a pair is slower on this VM
            pair = ((none, empty_runs), (many, full_runs))
            for home, into in pair if i % 2 == 0 else reversed(pair):
                into.append(gateway_start_ms(home))
        base, loaded = statistics.median(empty_runs), statistics.median(full_runs)
        delta = loaded - base
        verdict = "met" if delta <= TARGET_START_MS else "MISSED"
        print(
            f"Gateway start to ready, median of {args.starts}: none {base:.0f} ms, {args.schedules} schedules "
            f"{loaded:.0f} ms: {delta:+.1f} ms (target ≤ +{TARGET_START_MS:.0f} ms: {verdict}, "
            f"{delta / TARGET_START_MS:.2f} of the allowance); fastest of each: {min(empty_runs):.0f} ms and "
            f"{min(full_runs):.0f} ms: {min(full_runs) - min(empty_runs):+.1f} ms"
        )
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
