"""W1 as a user meets it, with real processes against a real Gateway process: ``anyy chat`` works in the
directory it was typed in (or ``--cwd DIR``, a relative one resolved by the client); a workspace removed
since is a clear notice and runs nothing (no fallback to the Gateway's folder); the store keeps the
workspace across a Gateway restart; the profile's ``[workspaces] roots`` refuse a folder outside them;
``anyy schedule add`` names its runs' workspace; ``anyy sessions list`` and ``show`` show it."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from tests.cli.live import ANYY, TIMEOUT, StartGateway, env_for, run, start_gateway

__all__ = ["start_gateway"]


def run_in(home: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``anyy ARGS`` typed in ``cwd``."""
    return subprocess.run(
        [ANYY, *args], cwd=cwd, capture_output=True, text=True, env=env_for(home), timeout=TIMEOUT, check=False
    )


def folder(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return Path(os.path.realpath(path))


def chat_record(home: Path, cwd: Path, *args: str) -> dict[str, object]:
    done = run_in(home, cwd, "chat", "--json", *args)
    assert done.returncode == 0, done.stderr
    record: dict[str, object] = json.loads(done.stdout)
    return record


def test_w1_chat_runs_its_tools_in_the_clients_directory(
    start_gateway: StartGateway, home: Path, tmp_path: Path
) -> None:
    start_gateway()  # started from the test's own directory: never where the tools must run
    project = folder(tmp_path / "my project")
    done = run_in(home, project, "chat", "run: pwd")
    assert done.returncode == 0, done.stderr
    assert f"«{project} [exit code 0]»" in done.stdout
    wrote = run_in(home, project, "chat", "run: echo made > made-here.txt")  # the sandbox lets it write there
    assert wrote.returncode == 0, wrote.stderr
    assert (project / "made-here.txt").read_text() == "made\n"
    listed = run(home, "sessions", "list")
    assert str(project) in listed.stdout
    session_id = listed.stdout.split()[0]
    shown = run(home, "sessions", "show", session_id)
    assert f"workspace {project}" in shown.stdout


def test_w1_cwd_chooses_the_workspace_relative_to_the_client(
    start_gateway: StartGateway, home: Path, tmp_path: Path
) -> None:
    start_gateway()
    base = folder(tmp_path / "base")
    sub = folder(base / "sub")
    done = run_in(home, base, "chat", "--cwd", "sub", "run: pwd")
    assert done.returncode == 0, done.stderr
    assert f"«{sub} [exit code 0]»" in done.stdout
    before = run(home, "sessions", "list").stdout
    refused = run_in(home, base, "chat", "--cwd", "missing", "run: pwd")
    assert refused.returncode != 0
    assert f"the workspace {base}/missing does not exist on host" in refused.stderr
    assert run(home, "sessions", "list").stdout == before  # refused before any session was made


def test_w1_a_missing_workspace_ends_the_turn_with_a_notice_and_runs_no_tool(
    start_gateway: StartGateway, home: Path, tmp_path: Path
) -> None:
    start_gateway()
    gone = folder(tmp_path / "gone")
    record = chat_record(home, gone, "hello")
    session_id = str(record["session_id"])
    gone.rmdir()
    witness = tmp_path / "ran"
    done = run_in(home, tmp_path, "chat", "--session", session_id, f"run: touch {witness}")
    assert done.returncode != 0
    assert f"The session's workspace {gone} does not exist on host" in done.stderr
    assert "recreate the folder, or change it" in done.stderr
    assert not witness.exists()
    exported = run(home, "sessions", "export", session_id, "--format", "jsonl").stdout
    kinds = [json.loads(line)["entry"]["kind"] for line in exported.splitlines()[1:]]
    assert "tool_call" not in kinds
    assert "notice" in kinds

    back = folder(tmp_path / "back")
    moved = run_in(home, tmp_path, "chat", "--session", session_id, "--cwd", str(back), "run: pwd")
    assert moved.returncode == 0, moved.stderr
    assert f"«{back} [exit code 0]»" in moved.stdout


def test_w1_the_store_keeps_the_workspace_across_a_gateway_restart(
    start_gateway: StartGateway, home: Path, tmp_path: Path
) -> None:
    start_gateway()
    project = folder(tmp_path / "kept")
    session_id = str(chat_record(home, project, "hello")["session_id"])
    assert run(home, "gateway", "stop").returncode == 0
    assert run(home, "gateway", "start").returncode == 0
    assert f"workspace {project}" in run(home, "sessions", "show", session_id).stdout
    done = run_in(home, tmp_path, "chat", "--session", session_id, "run: pwd")
    assert done.returncode == 0, done.stderr
    assert f"«{project} [exit code 0]»" in done.stdout


def test_w1_a_workspace_outside_the_profiles_roots_is_refused(
    start_gateway: StartGateway, home: Path, tmp_path: Path
) -> None:
    start_gateway()
    allowed = folder(tmp_path / "allowed")
    other = folder(tmp_path / "other")
    config = home / "profiles" / "default" / "config.toml"
    assert run(home, "gateway", "stop").returncode == 0
    config.write_text(config.read_text().replace("roots = []", f'roots = ["{allowed}"]', 1))
    assert run(home, "gateway", "start").returncode == 0
    inside = run_in(home, folder(allowed / "deep"), "chat", "run: pwd")
    assert inside.returncode == 0, inside.stderr
    assert f"«{allowed}/deep [exit code 0]»" in inside.stdout
    refused = run_in(home, other, "chat", "run: pwd")
    assert refused.returncode != 0
    assert f"the workspace {other} is outside this profile's workspace roots ({allowed};" in refused.stderr


def test_w1_a_schedule_names_its_runs_workspace(start_gateway: StartGateway, home: Path, tmp_path: Path) -> None:
    start_gateway()
    nightly = folder(tmp_path / "nightly")
    added = run_in(
        home, tmp_path, "schedule", "add", "nightly", "--every", "1d", "--prompt", "run: pwd", "--cwd", "nightly"
    )
    assert added.returncode == 0, added.stderr
    assert f"workspace {nightly}" in run(home, "schedule", "show", "nightly").stdout
    ran = run(home, "schedule", "run", "nightly", "--json")
    assert ran.returncode == 0, ran.stderr
    session_id = json.loads(ran.stdout)["session_id"]
    assert f"workspace {nightly}" in run(home, "sessions", "show", session_id).stdout
    later = folder(tmp_path / "later")
    moved = run_in(home, tmp_path, "schedule", "update", "nightly", "--cwd", "later")
    assert moved.returncode == 0, moved.stderr
    assert f"workspace {later}" in run(home, "schedule", "show", "nightly").stdout
    assert run(home, "schedule", "update", "nightly", "--reset", "cwd").returncode == 0
    assert "workspace the profile default" in run(home, "schedule", "show", "nightly").stdout
    assert run(home, "schedule", "update", "nightly", "--cwd", str(later)).returncode == 0
    later.rmdir()
    failed = run(home, "schedule", "run", "nightly", "--json")
    assert failed.returncode == 0, failed.stderr
    record = json.loads(failed.stdout)
    assert record["outcome"] == "failed"
    assert f"the workspace {later} does not exist on host" in record["error"]


def test_w1_a_resident_names_its_workspace(start_gateway: StartGateway, home: Path, tmp_path: Path) -> None:
    start_gateway()
    watched = folder(tmp_path / "watched")
    added = run_in(home, watched, "resident", "add", "keeper", "-i", "Keep an eye on this folder.", "--json")
    assert added.returncode == 0, added.stderr
    session_id = json.loads(added.stdout)["resident"]["session_id"]
    assert f"workspace {watched}" in run(home, "sessions", "show", session_id).stdout
