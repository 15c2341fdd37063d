"""W3: a fork can start with its own copy of the workspace: a git worktree of the user's repository
carrying the changes not yet committed (tracked and untracked), or a plain copy of everything."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from anyy.domain.errors import InvalidInput
from anyy.workspaces.captures import CaptureStore
from anyy.workspaces.forks import fork_workspace
from tests.workspaces.tree_state import tree_state


def _repo(root: Path) -> Path:
    root.mkdir()
    (root / ".gitignore").write_text("*.log\n")
    (root / "app").mkdir()
    (root / "app" / "main.py").write_text("print('v1')\n")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    subprocess.run(["git", "-c", "user.name=u", "-c", "user.email=u@x", "commit", "-qm", "v1"], cwd=root, check=True)
    (root / "app" / "main.py").write_text("print('v2, not committed')\n")
    (root / "app" / "new.py").write_text("untracked\n")
    (root / "app" / "run.log").write_text("ignored\n")
    return root


def test_w3_a_fork_workspace_as_a_worktree_carries_uncommitted_changes(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "repo")
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, check=True).stdout
    captures = CaptureStore(tmp_path / "captures.git")
    workspace = fork_workspace(captures, repo / "app", tmp_path / "fork", "worktree")
    assert workspace == tmp_path / "fork" / "app"
    assert (workspace / "main.py").read_text() == "print('v2, not committed')\n"
    assert (workspace / "new.py").read_text() == "untracked\n"
    assert not (workspace / "run.log").exists()  # ignored: not carried
    (workspace / "main.py").write_text("the fork's own\n")  # the branches edit apart
    assert (repo / "app" / "main.py").read_text() == "print('v2, not committed')\n"
    assert subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, check=True).stdout == head


def test_w3_a_fork_workspace_as_a_copy_has_everything(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "repo")
    (repo / "link").symlink_to("app/main.py")
    workspace = fork_workspace(CaptureStore(tmp_path / "captures.git"), repo, tmp_path / "copy", "copy")
    assert tree_state(workspace, skip=()) == tree_state(repo, skip=())


def test_w3_a_worktree_fork_outside_a_repository_is_a_clear_error(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(InvalidInput, match="not in a git repository"):
        fork_workspace(CaptureStore(tmp_path / "captures.git"), plain, tmp_path / "fork", "worktree")


def test_w2_a_workspace_in_a_subfolder_follows_the_ignore_rules_above_it(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "repo")
    (repo / ".gitignore").write_text("*.log\n/app/build/\n/other/\n!keep.log\n")
    (repo / "app" / "build").mkdir()
    (repo / "app" / "build" / "out.bin").write_text("built\n")
    (repo / "app" / "keep.log").write_text("kept\n")
    captures = CaptureStore(tmp_path / "captures.git")
    capture = captures.capture(repo / "app")
    paths = sorted(change.path for change in captures.changes(None, capture.commit))
    assert paths == ["keep.log", "main.py", "new.py"]
