"""H16: a lot's checks and reviews come back to the build agent that owns it, on the lot (so in the lot's
session), in bounded rounds; ``ameesh lots`` shows each lot's state and ``ameesh merge`` merges a ready lot
(refusing a conflict, changing nothing). The agents are the scripted fake harness; what they "do" in a turn
(commit, ``ameesh done``, ``ameesh review``) is a command their turn runs, in the environment the runner
gave it."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.ameesh.conftest import Ameesh

WORK = "echo step >> work.txt && git add work.txt && git commit -qm step && ameesh done"


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True)
    return done.stdout.strip()


@pytest.fixture
def repo(ameesh: Ameesh, tmp_path: Path) -> Path:
    for var, value in (("NAME", "t"), ("EMAIL", "t@example.org")):
        ameesh.monkeypatch.setenv(f"GIT_AUTHOR_{var}", value)
        ameesh.monkeypatch.setenv(f"GIT_COMMITTER_{var}", value)
    ameesh.monkeypatch.delenv("AMEESH_TURN", raising=False)
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "README").write_text("base\n", encoding="utf-8")
    git(repo, "add", "README")
    git(repo, "commit", "-q", "-m", "start")
    return repo


def canon(ameesh: Ameesh, tmp_path: Path, **lots: object) -> None:
    path = tmp_path / "canon.toml"
    lines = ["[lots]", "worktrees = true", 'base = "main"'] + [f"{k} = {json.dumps(v)}" for k, v in lots.items()]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    ameesh.monkeypatch.setenv("AMEESH_CANON", str(path))


def lot(ameesh: Ameesh, name: str) -> dict[str, object]:
    found: dict[str, object] = next(v for v in ameesh.json("lots") if v["name"] == name)
    return found


def test_h16_a_failing_check_returns_to_the_same_agent_on_the_same_lot_and_stops_after_n_rounds(
    ameesh: Ameesh, repo: Path, tmp_path: Path
) -> None:
    canon(ameesh, tmp_path, checks=["echo the-check-said-this; test -f ok.txt"], max_rounds=2, reviewers=[])
    ameesh("add", "ann", "--harness", "fake", "--dir", str(repo))
    ameesh.script({"run": ["sh", "-c", WORK]})
    ameesh("send", "ann", "--lot", "L1", "build L1")
    ameesh("run")
    calls = ameesh.calls()
    l1 = str(repo.parent / "repo.lots" / "L1")
    assert [c["cwd"] for c in calls] == [l1, l1]  # round 1 failed and came back; round 2 failed: stopped
    first, back = calls
    assert back["resume"] == first["session_id"]  # the same session: the lot's
    assert "Check failed on lot L1 (round 1 of 2)" in back["prompt"]
    assert "the-check-said-this" in back["prompt"]
    assert "[ran sh -c" in ameesh.answers("ann")[0]
    assert "exit 0" in ameesh.answers("ann")[0]
    shown = lot(ameesh, "L1")
    assert (shown["owner"], shown["state"], shown["rounds"]) == ("ann", "stopped", 2)
    (alert,) = [a for a in ameesh.json("alerts") if a["kind"] == "lot_rounds"]
    assert alert["agent"] == "ann"
    assert "lot L1 stopped after 2 round(s)" in alert["message"]
    assert "stopped" in ameesh("lots").output
    assert "only a stopped lot" not in ameesh("reopen", "L1").output
    assert (lot(ameesh, "L1")["state"], lot(ameesh, "L1")["rounds"]) == ("working", 0)
    assert not [a for a in ameesh.json("alerts") if a["kind"] == "lot_rounds"]
    assert "only a stopped lot is reopened" in ameesh("reopen", "L1", ok=False).output


def test_h16_check_output_is_capped_and_a_hanging_check_is_killed(ameesh: Ameesh, repo: Path, tmp_path: Path) -> None:
    canon(ameesh, tmp_path, checks=["python3 -c 'print(\"x\" * 5000 + \"END\")'; exit 1"], max_rounds=2,
          output_cap=100)  # fmt: skip
    ameesh("add", "ann", "--harness", "fake", "--dir", str(repo))
    ameesh.script({"match": "build", "run": ["sh", "-c", WORK]}, {"answer": "ok"})
    ameesh("send", "ann", "--lot", "L1", "build L1")
    ameesh("run")
    back = ameesh.calls()[-1]["prompt"]
    assert "END" in back
    assert "x" * 101 not in back
    assert "characters cut" in back

    canon(ameesh, tmp_path, checks=["sleep 600"], check_timeout=0.5, max_rounds=2)
    ameesh("send", "ann", "--lot", "L2", "build L2")
    ameesh("run")
    assert "`sleep 600` (killed after 0.5 s)" in ameesh.calls()[-1]["prompt"]


def test_h16_a_reviewers_findings_reach_the_build_agents_lot_session(
    ameesh: Ameesh, repo: Path, tmp_path: Path
) -> None:
    canon(ameesh, tmp_path, checks=["true"], reviewers=["rev"], max_rounds=3)
    ameesh("add", "ann", "--harness", "fake", "--dir", str(repo))
    ameesh("add", "rev", "--harness", "fake", "--role", "review", "--dir", str(repo))
    ameesh.script(
        {"match": "Review lot L1", "times": 1, "run": ["ameesh", "review", "--changes", "rename foo to bar"]},
        {"match": "Review lot L1", "run": ["ameesh", "review", "--approve"]},
        {"run": ["sh", "-c", WORK]},
    )
    ameesh("send", "ann", "--lot", "L1", "build L1")
    ameesh("run")
    l1 = str(repo.parent / "repo.lots" / "L1")
    calls = ameesh.calls()
    ann = [c for c in calls if "Review lot" not in c["prompt"]]
    rev = [c for c in calls if "Review lot" in c["prompt"]]
    assert len(ann) == 2
    assert len(rev) == 2
    assert "rename foo to bar" in ann[1]["prompt"]
    assert "by rev (round 1)" in ann[1]["prompt"]
    assert ann[1]["resume"] == ann[0]["session_id"]  # in the lot's session of the build agent
    assert {c["cwd"] for c in calls} == {l1}  # the reviewer reviews in the lot's worktree
    assert rev[1]["resume"] == rev[0]["session_id"]  # the reviewer keeps its session of the lot
    shown = lot(ameesh, "L1")
    assert (shown["state"], shown["rounds"], shown["verdicts"]) == ("ready", 2, {"rev": "approve"})
    prompts = [i for i in ameesh.json("thread", "ann") if i["kind"] == "prompt"]
    assert [p["lot"] for p in prompts] == ["L1", "L1"]


def test_h16_a_build_agent_cannot_approve_or_merge_its_own_lot(ameesh: Ameesh, repo: Path, tmp_path: Path) -> None:
    canon(ameesh, tmp_path, checks=["true"], reviewers=["rev"])
    ameesh("add", "ann", "--harness", "fake", "--dir", str(repo))
    ameesh("add", "rev", "--harness", "fake", "--role", "review", "--dir", str(repo))
    sneaky = f"{WORK}; ameesh review --approve; ameesh merge L1; AMEESH_AGENT=rev ameesh review --approve; true"
    ameesh.script({"match": "Review lot", "run": ["ameesh", "done"]}, {"run": ["sh", "-c", sneaky]})
    ameesh("send", "ann", "--lot", "L1", "build L1")
    ameesh("run")
    said = ameesh.answers("ann")[0]
    assert "ann is not one of the lot's reviewers" in said
    assert "refused inside an agent's turn" in said
    assert "lot L1 is ann's: only its build agent says it is done" in ameesh.answers("rev")[0]
    assert lot(ameesh, "L1")["state"] == "in review"  # the reviewer gave no verdict: not ready
    (unsaid,) = [a for a in ameesh.json("alerts") if a["kind"] == "lot_review"]
    assert unsaid["agent"] == "rev"
    assert "ended without a verdict" in unsaid["message"]
    refused = ameesh("merge", "L1", ok=False)
    assert refused.exit_code == 1
    assert "is in review: not ready to merge" in refused.output
    outside = ameesh("done", ok=False)  # not from a turn
    assert outside.exit_code == 1
    assert "from its own turn on a lot" in outside.output
    ameesh.monkeypatch.setenv("AMEESH_LOT", "L1")
    ameesh.monkeypatch.setenv("AMEESH_TURN", "guessed")
    forged = ameesh("review", "--approve", ok=False)
    assert forged.exit_code == 1
    assert "key is not known" in forged.output


def test_h16_a_clean_lot_becomes_ready_and_merge_merges_it_and_removes_its_worktree(
    ameesh: Ameesh, repo: Path, tmp_path: Path
) -> None:
    canon(ameesh, tmp_path, checks=["test -f work.txt", "true"], reviewers=[])
    ameesh("add", "ann", "--harness", "fake", "--dir", str(repo))
    ameesh.script({"run": ["sh", "-c", WORK]})
    ameesh("send", "ann", "--lot", "L1", "build L1")
    ameesh("run")
    assert len(ameesh.calls()) == 1  # nothing came back
    assert lot(ameesh, "L1")["state"] == "ready"
    (repo / "OTHER").write_text("main moved on\n", encoding="utf-8")
    git(repo, "add", "OTHER")
    git(repo, "commit", "-q", "-m", "other")
    out = ameesh("merge", "L1").output
    assert "merged into main (merge commit)" in out
    worktree = repo.parent / "repo.lots" / "L1"
    assert not worktree.exists()
    assert "removed" in out
    assert (repo / "work.txt").read_text(encoding="utf-8") == "step\n"  # main has the lot's work
    assert git(repo, "merge-base", "--is-ancestor", "lot/L1", "main") == ""
    assert lot(ameesh, "L1")["state"] == "merged"
    assert ameesh.json("show", "ann")["workdir"] == str(repo)  # back in the repository
    assert ameesh.json("show", "ann")["session_id"] is None  # the lot's session is dropped with the lot
    assert ameesh.json("sessions", "ann")[-1]["close_reason"] == "lot L1 merged"
    again = ameesh("merge", "L1", ok=False)
    assert "is merged: not ready" in again.output


def test_h16_a_fast_forward_when_main_did_not_move(ameesh: Ameesh, repo: Path, tmp_path: Path) -> None:
    canon(ameesh, tmp_path, checks=[], reviewers=[])
    ameesh("add", "ann", "--harness", "fake", "--dir", str(repo))
    ameesh.script({"run": ["sh", "-c", WORK]})
    ameesh("send", "ann", "--lot", "L1", "build L1")
    ameesh("run")
    tip = git(repo.parent / "repo.lots" / "L1", "rev-parse", "HEAD")
    assert "(fast-forward)" in ameesh("merge", "L1").output
    assert git(repo, "rev-parse", "main") == tip


def test_h16_a_conflict_is_refused_and_nothing_changes(ameesh: Ameesh, repo: Path, tmp_path: Path) -> None:
    canon(ameesh, tmp_path, checks=["true"], reviewers=[])
    ameesh("add", "ann", "--harness", "fake", "--dir", str(repo))
    edit = "echo lot > README && git commit -qam lot && ameesh done"
    ameesh.script({"run": ["sh", "-c", edit]})
    ameesh("send", "ann", "--lot", "L1", "build L1")
    ameesh("run")
    assert lot(ameesh, "L1")["state"] == "ready"
    (repo / "README").write_text("main\n", encoding="utf-8")
    git(repo, "commit", "-qam", "main")
    before = git(repo, "rev-parse", "main")
    refused = ameesh("merge", "L1", ok=False)
    assert refused.exit_code == 1
    assert "lot L1 conflicts with main in README; nothing was merged" in refused.output
    assert "Traceback" not in refused.output
    assert git(repo, "rev-parse", "main") == before
    assert git(repo, "status", "--porcelain") == ""
    assert (repo / "README").read_text(encoding="utf-8") == "main\n"
    assert (repo.parent / "repo.lots" / "L1" / ".git").exists()  # the lot's worktree is kept
    assert lot(ameesh, "L1")["state"] == "ready"
