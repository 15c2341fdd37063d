"""Benchmark of what a hook adds to a tool call (issue 24, N6): target ≤ 20 ms plus the hook's own run time.

    .venv/bin/python -m bench.hooks_bench [--calls 200] [--rounds 3]

The runtime of a profile (its real SQLite store, the scripted offline model) runs turns whose one model
response asks for ``--calls`` ``read_file`` calls of a small file; the same turns run without hooks and with
one trusted ``pre_tool`` hook ``/bin/true`` (no opinion: the rules decide). The hook's own run time is
``/bin/true`` started by ``subprocess.run``, the plain way to run a program, measured alone. Reported per
call, the median of the rounds: without, with, the hook alone, and what anyy adds above the hook
(``with - without - alone``: the trust check with its file hashes, the JSON, the asyncio subprocess).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from anyy.api.events import ExecutionStateChanged
from anyy.domain.model_io import ToolCallEvent
from anyy.domain.queue import NewSubmission
from anyy.hooks.survey import survey
from anyy.hooks.trust import TRUST_FILE, trust
from anyy.profiles import create_profile
from anyy.providers.offline import OfflineProvider
from anyy.providers.registry import ModelRegistry
from anyy.runtime.assembly import build_deps, new_session
from anyy.runtime.runtime import Runtime

HOOK = '\n[[hooks.pre_tool]]\ncommand = ["/bin/true"]\nmatcher = "read_file"\n'


async def _turns(home: Path, *, hooked: bool, calls: int, rounds: int) -> list[float]:
    """Seconds per tool call of each round."""
    profile = create_profile(home, "hooked" if hooked else "plain")
    if hooked:
        profile.config_path.write_text(profile.config_path.read_text() + HOOK)
        trust(
            profile.path / TRUST_FILE,
            [line.fingerprint for line in survey(profile.load_config().hooks, profile.path / TRUST_FILE)],
        )
    work = home / f"work-{profile.name}"
    work.mkdir()
    (work / "small.txt").write_text("a small file\n" * 10)
    model = OfflineProvider(scripted_only=True)
    deps = build_deps(profile, workdir=work)
    config = profile.load_config()
    deps.models = ModelRegistry({n: config.provider(n) for n in config.provider_names()}, instances={"offline": model})
    deps.owner.start()
    runtime = Runtime(deps)
    await runtime.start()
    per_call = []
    try:
        session = await deps.owner.call(lambda s: s.create_session(new_session(config)))
        for round_ in range(rounds):
            batch = [
                ToolCallEvent(call_id=f"r{round_}-{i}", name="read_file", arguments={"path": "small.txt"})
                for i in range(calls)
            ]
            model.enqueue(batch, "done")
            events = deps.bus.subscribe(session.id)
            began = time.perf_counter()
            await runtime.submit(session.id, NewSubmission(text="read it"))
            state = ""
            while state not in ("completed", "failed"):
                event = await asyncio.wait_for(events.get(), 600)
                state = event.state if isinstance(event, ExecutionStateChanged) else ""
            elapsed = time.perf_counter() - began
            events.close()
            if state != "completed":
                raise RuntimeError(f"the turn ended {state}")
            per_call.append(elapsed / calls)
    finally:
        await runtime.aclose()
        await deps.owner.aclose()
    return per_call


def _alone(runs: int) -> float:
    began = time.perf_counter()
    for _ in range(runs):
        subprocess.run(["/bin/true"], check=True)
    return (time.perf_counter() - began) / runs


def measure(calls: int, rounds: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="anyy-hooks-bench-") as tmp:
        home = Path(tmp)
        without = statistics.median(asyncio.run(_turns(home, hooked=False, calls=calls, rounds=rounds)))
        with_hook = statistics.median(asyncio.run(_turns(home, hooked=True, calls=calls, rounds=rounds)))
    alone = _alone(calls)
    return {
        "calls_per_turn": calls,
        "rounds": rounds,
        "ms_per_call_without_hooks": round(without * 1000, 3),
        "ms_per_call_with_a_true_hook": round(with_hook * 1000, 3),
        "ms_true_alone_subprocess_run": round(alone * 1000, 3),
        "ms_added_by_anyy_above_the_hook": round((with_hook - without - alone) * 1000, 3),
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(None if argv is None else list(argv))
    print(json.dumps(measure(args.calls, args.rounds), indent=2), flush=True)


if __name__ == "__main__":
    main()
