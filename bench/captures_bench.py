"""Benchmark of file captures and rewinds (W2-W4), on the capture store the Gateway uses.

    .venv/bin/python -m bench.captures_bench [--files 10000] [--changed 10] [--rewind 100] [--turns 1000]
        [--big-kib 1024] [--edit-bytes 4096] [--repeat 15]

In a temporary folder:
1. A workspace of ``--files`` small files (in 100 folders) is captured once (the first capture hashes
   everything); then ``--repeat`` times: ``--changed`` files are rewritten and the workspace is captured.
   Median and p90 (target: <= 50 ms for 10k files with 10 changed).
2. ``--rewind`` files are changed after a capture, captured again, and the workspace is restored to the
   first capture; ``--repeat`` times (target: <= 200 ms for 100 changed files). The restore includes
   its preview (the workspace is captured to tell hand edits) and writes every file back.
3. ``--turns`` turns each overwrite ``--edit-bytes`` bytes at a random place of one ``--big-kib`` KiB
   file of random bytes and capture it, as an agent editing one big file would; the capture store's size
   on disk (every file under captures.git, after the store's own periodic repacks, and again after a full
   repack) against the bytes changed (the first version counted whole) (target: <= 2x).

Every capture is synced to disk (``core.fsync``) as in production.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import statistics
import tempfile
import time
from pathlib import Path

from anyy.workspaces.captures import CaptureStore

CAPTURE_TARGET_MS = 50.0
REWIND_TARGET_MS = 200.0
GROWTH_TARGET = 2.0


def _ms(seconds: float) -> float:
    return seconds * 1000


def _cpu() -> float:
    """CPU seconds used so far by this process and the git processes it waited for (load-independent)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _report(name: str, samples: list[float], target: float, cpu: list[float]) -> None:
    ordered = sorted(samples)
    p90 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.9))]
    median = statistics.median(ordered)
    verdict = "met" if median <= target else "MISSED"
    print(
        f"{name}: median {median:.1f} ms, p90 {p90:.1f} ms (target {target:.0f} ms: {verdict}); "
        f"CPU median {statistics.median(cpu):.1f} ms"
    )


def _workspace(root: Path, files: int) -> list[Path]:
    made = []
    for i in range(files):
        folder = root / f"dir{i % 100:03d}"
        folder.mkdir(exist_ok=True)
        path = folder / f"file{i:05d}.txt"
        path.write_text(f"file {i}\n" + "x" * 200 + "\n")
        made.append(path)
    return made


def bench_capture(base: Path, files: int, changed: int, repeat: int) -> None:
    work = base / "capture-work"
    work.mkdir()
    paths = _workspace(work, files)
    store = CaptureStore(base / "capture.git")
    started = time.perf_counter()
    store.capture(work)
    print(f"first capture of {files} files: {_ms(time.perf_counter() - started):.0f} ms (hashes every file)")
    rng = random.Random(1)
    samples, cpu = [], []
    for turn in range(repeat):
        for path in rng.sample(paths, changed):
            path.write_text(f"turn {turn} {rng.random()}\n")
        started, used = time.perf_counter(), _cpu()
        store.capture(work)
        samples.append(_ms(time.perf_counter() - started))
        cpu.append(_ms(_cpu() - used))
    _report(f"capture, {files} files, {changed} changed", samples, CAPTURE_TARGET_MS, cpu)
    started = time.perf_counter()
    store.capture(work)
    print(f"capture, {files} files, none changed: {_ms(time.perf_counter() - started):.1f} ms")


def bench_rewind(base: Path, files: int, changed: int, repeat: int) -> None:
    work = base / "rewind-work"
    work.mkdir()
    paths = _workspace(work, files)
    store = CaptureStore(base / "rewind.git")
    rng = random.Random(2)
    samples, cpu = [], []
    for turn in range(repeat):
        before = store.capture(work)
        for path in rng.sample(paths, changed):
            path.write_text(f"turn {turn} {rng.random()}\n")
        store.capture(work)
        started, used = time.perf_counter(), _cpu()
        report = store.restore(work, before.commit)
        samples.append(_ms(time.perf_counter() - started))
        cpu.append(_ms(_cpu() - used))
        assert len(report.changed) == changed, report
    _report(f"rewind of {changed} changed files ({files} in the workspace)", samples, REWIND_TARGET_MS, cpu)


def _size(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file())


def bench_growth(base: Path, turns: int, big_kib: int, edit_bytes: int) -> None:
    work = base / "growth-work"
    work.mkdir()
    root = base / "growth.git"
    store = CaptureStore(root)
    rng = random.Random(3)
    data = bytearray(rng.randbytes(big_kib * 1024))
    big = work / "big.bin"
    big.write_bytes(data)
    store.capture(work)
    empty = CaptureStore(base / "empty.git")
    empty.ensure()
    overhead = _size(base / "empty.git")  # an empty store's own files (hooks, config, description)
    changed = len(data)
    started = time.perf_counter()
    for _ in range(turns):
        at = rng.randrange(0, len(data) - edit_bytes)
        data[at : at + edit_bytes] = rng.randbytes(edit_bytes)
        big.write_bytes(data)
        store.capture(work)
        changed += edit_bytes
    seconds = time.perf_counter() - started
    grown = _size(root) - overhead
    ratio = grown / changed
    verdict = "met" if ratio <= GROWTH_TARGET else "MISSED"
    print(
        f"{turns} turns editing {edit_bytes} B of one {big_kib} KiB file ({_ms(seconds) / turns:.1f} ms a turn): "
        f"store {grown / 1e6:.2f} MB for {changed / 1e6:.2f} MB changed = {ratio:.2f}x "
        f"(with the periodic repacks; target {GROWTH_TARGET:.0f}x: {verdict})"
    )
    store.repack(full=True)
    grown = _size(root) - overhead
    print(f"  after a full repack: {grown / 1e6:.2f} MB = {grown / changed:.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--changed", type=int, default=10)
    parser.add_argument("--rewind", type=int, default=100)
    parser.add_argument("--turns", type=int, default=1000)
    parser.add_argument("--big-kib", type=int, default=1024)
    parser.add_argument("--edit-bytes", type=int, default=4096)
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory(prefix="anyy-captures-bench-") as folder:
        base = Path(folder)
        bench_capture(base, args.files, args.changed, args.repeat)
        bench_rewind(base, args.files, args.rewind, args.repeat)
        bench_growth(base, args.turns, args.big_kib, args.edit_bytes)
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
