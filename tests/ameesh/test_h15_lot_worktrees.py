"""H15: a worktree per lot. Two build agents on one repository, each on its own lot, play in the lots' own
worktrees (branches ``lot/L``, made from the canon's base branch), never in each other's files; a lot's
worktree is reused by its later messages; the session and the worktree change together at a lot change;
a lot's worktree is never removed while dirty or unmerged."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from ameesh import lots
from tests.ameesh.conftest import Ameesh


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.org", *args],
        cwd=cwd, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return done.stdout.strip()


@pytest.fixture
def repo(ameesh: Ameesh, tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "README").write_text("base\n", encoding="utf-8")
    git(repo, "add", "README")
    git(repo, "commit", "-q", "-m", "start")
    canon = tmp_path / "canon.toml"
    canon.write_text('[lots]\nworktrees = true\nbase = "main"\n', encoding="utf-8")
    ameesh.monkeypatch.setenv("AMEESH_CANON", str(canon))
    return repo


def test_h15_two_build_agents_work_on_their_lots_in_worktrees_of_their_own(ameesh: Ameesh, repo: Path) -> None:
    for name in ("ann", "bob"):
        ameesh("add", name, "--harness", "fake", "--dir", str(repo))
    ameesh("send", "ann", "--lot", "L1", "build L1")
    ameesh("send", "bob", "--lot", "L2", "build L2")
    ameesh("send", "ann", "--lot", "L1", "fix L1")
    ameesh("run")
    cwd = {c["prompt"]: c["cwd"] for c in ameesh.calls()}
    l1, l2 = repo.parent / "repo.lots" / "L1", repo.parent / "repo.lots" / "L2"
    assert cwd == {"build L1": str(l1), "fix L1": str(l1), "build L2": str(l2)}  # reused; never the other's
    assert git(l1, "branch", "--show-current") == "lot/L1"
    assert git(l2, "branch", "--show-current") == "lot/L2"
    assert git(l1, "rev-parse", "HEAD") == git(repo, "rev-parse", "main")  # made from the base branch
    shown = ameesh.json("show", "ann")
    assert (shown["workdir"], shown["git_branch"]) == (str(l1), "lot/L1")

    ameesh("send", "ann", "--lot", "L3", "build L3")  # a lot change: new session and new worktree together
    ameesh("run")
    old, new = ameesh.json("sessions", "ann")[-2:]
    assert old["lot"] == "L1"
    assert new["lot"] == "L3"
    summary_call = next(c for c in ameesh.calls() if "resume summary" in c["prompt"].lower())
    assert summary_call["cwd"] == str(l1)  # the old session's summary, where it ran
    assert ameesh.calls()[-1]["cwd"] == str(repo.parent / "repo.lots" / "L3")


def test_h15_a_lots_worktree_is_never_removed_dirty_or_unmerged(repo: Path) -> None:
    path, made = lots.ensure(repo, "L1", "main")
    assert made
    assert lots.ensure(repo, "L1", "main") == (path, False)
    (path / "work.txt").write_text("half done\n", encoding="utf-8")
    with pytest.raises(lots.LotError, match="uncommitted changes"):
        lots.remove(repo, "L1", "main")
    git(path, "add", "work.txt")
    git(path, "commit", "-q", "-m", "lot one")
    with pytest.raises(lots.LotError, match="not merged into main"):
        lots.remove(repo, "L1", "main")
    git(repo, "merge", "-q", "--ff-only", "lot/L1")
    assert lots.remove(repo, "L1", "main") == path
    assert not path.exists()
