"""The scripted fake harness: a small program that behaves like a coding-agent CLI, for fast tests.

    python -m ameesh.harnesses.fakeprog -p PROMPT [--session-id ID | --resume ID] [--model M] [--effort E]

Like Claude Code, ``--session-id`` creates a session (and fails if it exists) and ``--resume`` continues
one (and fails if it does not). It prints one JSON object: ``type, is_error, result, session_id, usage,
context_tokens``. Sessions and a log of every call (``calls.jsonl``) live in ``FAKE_HARNESS_HOME``.

By default it answers ``FRESH: <prompt>`` on a new session and ``RESUMED (N earlier turns): <prompt>``
after that; the context re-read grows with the history (1000 tokens + characters / 4). A script
(``FAKE_HARNESS_SCRIPT``, a JSON file ``{"rules": [...]}``) changes that: the first rule whose ``match``
is in the prompt (no ``match``: any prompt) and whose ``times`` is not used up applies. A rule may set
``answer``, ``context_tokens``, ``fail`` (an error result), ``exit`` (exit status), ``hang`` (never
answer), ``notify`` (a path, FIFO or file, written with ``started`` once the prompt is in the session),
``stdout`` or ``stdout_file`` (printed verbatim instead of the JSON object), ``spawn`` (a path: a
``sleep`` process is left running, its pid written there), ``run`` (a command, argv, run in the turn's
directory and environment as an agent would; ``ameesh`` first means this Python's ``-m ameesh``; its
output ends the answer). Like Claude Code, a failed or
hanging turn leaves its prompt in the session (unanswered) and ``--resume-session-at UUID`` resumes the
session as it was up to that answer; an answer given with unanswered prompts in the history says so.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import sys
import time
import uuid
from pathlib import Path
from typing import Any


def _rule(home: Path, prompt: str) -> dict[str, Any]:
    script = os.environ.get("FAKE_HARNESS_SCRIPT")
    if not script:
        return {}
    rules = json.loads(Path(script).read_text(encoding="utf-8")).get("rules", [])
    with open(home / "counters.lock", "w", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        counters_path = home / "counters.json"
        counters = json.loads(counters_path.read_text(encoding="utf-8")) if counters_path.exists() else {}
        for index, rule in enumerate(rules):
            if rule.get("match") is not None and rule["match"] not in prompt:
                continue
            used = counters.get(str(index), 0)
            if rule.get("times") is not None and used >= rule["times"]:
                continue
            counters[str(index)] = used + 1
            counters_path.write_text(json.dumps(counters), encoding="utf-8")
            return dict(rule)
    return {}


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="fakeprog")
    parser.add_argument("-p", dest="prompt", required=True)
    parser.add_argument("--session-id")
    parser.add_argument("--resume")
    parser.add_argument("--resume-session-at", dest="resume_at")
    parser.add_argument("--model")
    parser.add_argument("--effort")
    return parser.parse_args(argv)


def _scripted(rule: dict[str, Any]) -> int | None:
    """A rule's side effects and verbatim output; its exit code when that output is the whole turn."""
    if rule.get("spawn"):  # leave a process behind, as `codex` leaves its `codex app-server`
        import subprocess

        child = subprocess.Popen(["sleep", "600"], start_new_session=True)  # noqa: S607
        Path(rule["spawn"]).write_text(str(child.pid), encoding="utf-8")
    if rule.get("stdout_file"):
        sys.stdout.write(Path(rule["stdout_file"]).read_text(encoding="utf-8"))
        return int(rule.get("exit", 0))
    if rule.get("stdout") is not None:
        sys.stdout.write(rule["stdout"])
        return int(rule.get("exit", 0))
    return None


def _session(home: Path, args: argparse.Namespace) -> tuple[Path, list[dict[str, Any]]] | str:
    """The session's file and its turns (cut back with ``--resume-session-at``), or why it cannot be used."""
    sid = args.session_id or args.resume
    if not sid:
        return "fakeprog: --session-id or --resume is required"
    path = home / "sessions" / f"{sid}.json"
    if args.session_id and path.exists():
        return f"Error: Session ID {sid} is already in use."
    if args.resume and not path.exists():
        return f"No conversation found with session ID: {sid}"
    history: list[dict[str, Any]] = json.loads(path.read_text(encoding="utf-8")) if path.exists() else []
    if args.resume_at:  # like Claude Code: the session as it was up to that answer
        kept = [i for i, turn in enumerate(history) if turn.get("uuid") == args.resume_at]
        if not kept:
            return f"No message found with message.uuid of: {args.resume_at}"
        history = history[: kept[0] + 1]
    return path, history


def _failing(rule: dict[str, Any], args: argparse.Namespace, path: Path, history: list[dict[str, Any]]) -> int | None:
    """A rule that fails or hangs: the exit code (a hang never returns)."""
    if rule.get("fail") or rule.get("hang") or rule.get("notify"):
        # Like Claude Code, the prompt is in the session before the model answers (or fails).
        pending = [*history, {"prompt": args.prompt, "answer": None, "uuid": str(uuid.uuid4())}]
        path.write_text(json.dumps(pending), encoding="utf-8")
    if rule.get("notify"):
        with open(rule["notify"], "w", encoding="utf-8") as note:
            note.write("started\n")
    if rule.get("hang"):
        while True:
            time.sleep(60)
    if rule.get("fail"):
        sid = args.session_id or args.resume
        print(json.dumps({"type": "result", "is_error": True, "result": rule["fail"], "session_id": sid}))
        return int(rule.get("exit", 1))
    return None


def _answer(rule: dict[str, Any], prompt: str, history: list[dict[str, Any]]) -> str:
    first_line = prompt.strip().splitlines()[-1] if prompt.strip() else ""
    if "answer" in rule:
        return str(rule["answer"])
    if not history:
        return f"FRESH: {first_line}"
    answer = f"RESUMED ({len(history)} earlier turns): {first_line}"
    unanswered = sum(turn["answer"] is None for turn in history)
    return answer + (f" [unanswered in history: {unanswered}]" if unanswered else "")


def _run(rule: dict[str, Any]) -> str:
    """A rule's ``run``: the command an agent runs in its turn (``ameesh done``…), its output."""
    argv = list(rule.get("run") or [])
    if not argv:
        return ""
    import subprocess

    if argv[0] == "ameesh":
        argv = [sys.executable, "-m", "ameesh", *argv[1:]]
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"  # `ameesh` in a shell line
    env = {**os.environ, "PATH": path}
    done = subprocess.run(argv, capture_output=True, text=True, check=False, env=env)  # noqa: S603 - the script
    return f"\n[ran {' '.join(rule['run'])}: exit {done.returncode}] {done.stdout.strip()} {done.stderr.strip()}"


def main(argv: list[str] | None = None) -> int:
    args = _arguments(argv)
    home = Path(os.environ.get("FAKE_HARNESS_HOME") or Path.cwd() / ".fake-harness")
    (home / "sessions").mkdir(parents=True, exist_ok=True)
    with open(home / "calls.jsonl", "a", encoding="utf-8") as log:
        log.write(json.dumps({**vars(args), "cwd": os.getcwd()}) + "\n")
    rule = _rule(home, args.prompt)
    scripted = _scripted(rule)
    if scripted is not None:
        return scripted
    found = _session(home, args)
    if isinstance(found, str):
        print(found, file=sys.stderr)
        return 2 if found.startswith("fakeprog:") else 1
    path, history = found
    failed = _failing(rule, args, path, history)
    if failed is not None:
        return failed
    answer = _answer(rule, args.prompt, history) + _run(rule)
    history.append({"prompt": args.prompt, "answer": answer, "uuid": str(uuid.uuid4())})
    path.write_text(json.dumps(history), encoding="utf-8")
    chars = sum(len(t["prompt"]) + len(t["answer"] or "") for t in history)
    context = int(rule.get("context_tokens", 1000 + chars // 4))
    usage = {"input_tokens": context, "output_tokens": max(1, len(answer) // 4)}
    result = {"type": "result", "is_error": False, "result": answer, "session_id": args.session_id or args.resume}
    print(json.dumps({**result, "usage": usage, "context_tokens": context, "model": args.model, "effort": args.effort}))
    return int(rule.get("exit", 0))


if __name__ == "__main__":
    sys.exit(main())
