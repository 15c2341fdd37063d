"""Import of a 10k-record session (SPEC I1-I3; target: at most 2 s), per format, into a fresh SQLite
profile store, then the same import again (nothing new: the match alone).

The sessions are written in each format's own record shapes (as the real CLIs write them, see
docs/import.md): user prompts, answers with a tool call every fourth turn and its result.

    .venv/bin/python -m bench.import_bench

Wall and CPU time are both printed: on a loaded machine the CPU time says what the import costs.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from anyy.cli.import_sources import parse_file
from anyy.profiles import create_profile
from anyy.profiles.store import open_store
from anyy.storage.imports import write_import

RECORDS = 10_000
TARGET = 2.0
WORDS = [
    "the",
    "quick",
    "brown",
    "fox",
    "jumps",
    "over",
    "a",
    "lazy",
    "dog",
    "while",
    "the",
    "model",
    "reads",
    "files",
    "and",
    "runs",
    "commands",
]


def _text(i: int) -> str:
    return " ".join(WORDS[(i * 7 + k) % len(WORDS)] for k in range(40))


def claude_lines(n: int) -> list[str]:
    out: list[str] = []
    parent = None
    for i in range(n):
        record: dict[str, Any]
        uuid = f"00000000-0000-4000-8000-{i:012d}"
        base = {
            "uuid": uuid,
            "parentUuid": parent,
            "sessionId": "bench",
            "cwd": "/tmp",
            "timestamp": "2026-12-07T05:00:00Z",
        }
        if i % 4 == 0:
            record = {**base, "type": "user", "message": {"role": "user", "content": _text(i)}}
        elif i % 4 == 1:
            content = [
                {"type": "text", "text": _text(i)},
                {"type": "tool_use", "id": f"t{i}", "name": "Bash", "input": {"command": "ls"}},
            ]
            record = {**base, "type": "assistant", "message": {"id": f"m{i}", "model": "m", "content": content}}
        elif i % 4 == 2:
            content = [{"type": "tool_result", "tool_use_id": f"t{i - 1}", "content": _text(i)}]
            record = {**base, "type": "user", "message": {"role": "user", "content": content}}
        else:
            record = {
                **base,
                "type": "assistant",
                "message": {"id": f"m{i}", "model": "m", "content": [{"type": "text", "text": _text(i)}]},
            }
        out.append(json.dumps(record))
        parent = uuid
    return out


def pi_lines(n: int) -> list[str]:
    out = [
        json.dumps({"type": "session", "version": 3, "id": "bench", "timestamp": "2026-12-07T05:00:00Z", "cwd": "/tmp"})
    ]
    parent = None
    for i in range(n - 1):
        rid = f"{i:08x}"
        message: dict[str, Any]
        if i % 4 == 0:
            message = {"role": "user", "content": [{"type": "text", "text": _text(i)}]}
        elif i % 4 == 1:
            message = {
                "role": "assistant",
                "model": "m",
                "provider": "p",
                "content": [
                    {"type": "text", "text": _text(i)},
                    {"type": "toolCall", "id": f"t{i}", "name": "bash", "arguments": {"command": "ls"}},
                ],
            }
        elif i % 4 == 2:
            message = {
                "role": "toolResult",
                "toolCallId": f"t{i - 1}",
                "toolName": "bash",
                "content": [{"type": "text", "text": _text(i)}],
            }
        else:
            message = {"role": "assistant", "model": "m", "content": [{"type": "text", "text": _text(i)}]}
        out.append(
            json.dumps(
                {
                    "type": "message",
                    "id": rid,
                    "parentId": parent,
                    "timestamp": "2026-12-07T05:00:00Z",
                    "message": message,
                }
            )
        )
        parent = rid
    return out


def codex_lines(n: int) -> list[str]:
    out = [json.dumps({"type": "session_meta", "payload": {"id": "bench", "cwd": "/tmp"}})]
    for i in range(n - 1):
        item: dict[str, Any]
        if i % 4 == 0:
            item = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": _text(i)}]}
        elif i % 4 == 1:
            item = {"type": "function_call", "name": "exec_command", "arguments": '{"cmd": "ls"}', "call_id": f"c{i}"}
        elif i % 4 == 2:
            item = {"type": "function_call_output", "call_id": f"c{i - 1}", "output": _text(i)}
        else:
            item = {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": _text(i)}]}
        out.append(json.dumps({"type": "response_item", "timestamp": "2026-12-07T05:00:00Z", "payload": item}))
    return out


MAKERS: dict[str, Callable[[int], list[str]]] = {"claude-code": claude_lines, "codex": codex_lines, "pi": pi_lines}


def main() -> int:
    missed = False
    with tempfile.TemporaryDirectory() as tmp:
        profile = create_profile(Path(tmp) / "home", "default")
        store = open_store(profile)
        try:
            for fmt, make in MAKERS.items():
                path = Path(tmp) / f"rollout-bench-{fmt}.jsonl"
                path.write_text("\n".join(make(RECORDS)) + "\n")
                start, cpu = time.perf_counter(), time.process_time()
                done = write_import(store, parse_file(fmt, path))
                first, first_cpu = time.perf_counter() - start, time.process_time() - cpu
                start, cpu = time.perf_counter(), time.process_time()
                again = write_import(store, parse_file(fmt, path))
                second, second_cpu = time.perf_counter() - start, time.process_time() - cpu
                assert again.added == 0
                verdict = "met" if first <= TARGET else "MISSED"
                missed |= first > TARGET
                print(
                    f"{fmt:<12} {RECORDS:,} records -> {done.added:,} entries: import {first:.2f} s, "
                    f"CPU {first_cpu:.2f} s (target <= {TARGET:.0f} s: {verdict}; {first / TARGET:.2f} x target); "
                    f"re-import {second:.2f} s, CPU {second_cpu:.2f} s"
                )
        finally:
            store.close()
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
