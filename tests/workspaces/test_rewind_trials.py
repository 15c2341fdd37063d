"""W2/W3: 300 seeded, reproducible trials against the capture store. Each trial captures a workspace, lets
"the agent" change it (``write_file``, ``sed -i``, ``rm``, ``mv``, ``mkdir``, symlinks, ``chmod``, files
the workspace's ``.gitignore`` ignores, untracked ones), captures it again, sometimes edits a file by hand,
and rewinds: the tree must be byte-identical to the one before (every file's hash, executable bit and
link target), ignored files untouched, and a hand-edited file kept and reported. The user's own ``.git``
stays byte-identical throughout. A failing trial prints its seed: ``TRIAL_SEED=<n>`` reruns only it."""

from __future__ import annotations

import os
import random
import shlex
import subprocess
from pathlib import Path

import pytest

from anyy.workspaces.captures import CaptureStore
from tests.workspaces.tree_state import State, git_dir_state, tree_state

TRIALS = 300
HALVES = 2  # two tests of 150 trials: pytest -n 2 runs them side by side
NAMES = ["a.txt", "b.txt", "c", "d/e.txt", "d/f", "g/h/i.txt", "sp ace.txt", "é.txt", "x.tmp", "ignored/y"]
IGNORED = (".tmp",)


def _ignored(path: str) -> bool:
    return path.endswith(IGNORED) or path.startswith("ignored/")


def _split(state: State) -> tuple[State, State]:
    kept = {p: v for p, v in state.items() if not _ignored(p)}
    return kept, {p: v for p, v in state.items() if _ignored(p)}


def _agent_script(rng: random.Random, work: Path) -> str:
    """A few shell steps an agent might run (each may fail harmlessly: the outcome is what counts)."""
    steps: list[str] = []
    for _ in range(rng.randint(1, 4)):
        name = rng.choice(NAMES)
        other = rng.choice(NAMES)
        q, o = shlex.quote(name), shlex.quote(other)
        folder = shlex.quote(os.path.dirname(name) or ".")
        op = rng.choice(["write", "write", "sed", "rm", "mv", "mkdir", "link", "chmod", "append", "rmdir"])
        if op == "write":  # as write_file does: the whole content
            text = shlex.quote(f"v{rng.randint(0, 9)}\nline {rng.randint(0, 99)}\n")
            steps.append(f"mkdir -p {folder} && printf %s {text} > {q}")
        elif op == "append":
            steps.append(f"mkdir -p {folder} && echo more{rng.randint(0, 9)} >> {q}")
        elif op == "sed":
            steps.append(f"sed -i 's/line/LINE/;s/v[0-9]/w{rng.randint(0, 9)}/' {q}")
        elif op == "rm":
            steps.append(f"rm -rf {q}")
        elif op == "mv":
            steps.append(f"mkdir -p {shlex.quote(os.path.dirname(other) or '.')} && mv -f {q} {o}")
        elif op == "mkdir":
            steps.append(f"mkdir -p {q}")
        elif op == "rmdir":
            steps.append(f"rm -rf {folder}" if folder != "." else "true")
        elif op == "link":
            target = shlex.quote(rng.choice([os.path.basename(other), "missing-target", "../outside"]))
            steps.append(f"mkdir -p {folder} && ln -sfn {target} {q}")
        else:
            steps.append(f"chmod {rng.choice(['+x', '-x'])} {q}")
    return "\n".join(f"( {step} ) 2>/dev/null || true" for step in steps)


def _run(work: Path, script: str) -> None:
    subprocess.run(["sh", "-c", script], cwd=work, check=True)


def _hand_edit(rng: random.Random, work: Path, state: State) -> str | None:
    files = [p for p, v in state.items() if v[0] == "file" and not _ignored(p)]
    if not files:
        return None
    path = rng.choice(sorted(files))
    with open(work / path, "ab") as handle:
        handle.write(b"edited by hand\n")
    return path


@pytest.mark.parametrize("half", range(HALVES))
def test_w2_w3_randomized_rewinds_restore_a_byte_identical_tree(tmp_path: Path, half: int) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / ".gitignore").write_text("*.tmp\nignored/\n")
    (work / "a.txt").write_text("v0\nline 1\n")
    subprocess.run(["git", "init", "-q"], cwd=work, check=True)
    subprocess.run(["git", "add", "-A"], cwd=work, check=True)
    subprocess.run(["git", "-c", "user.name=u", "-c", "user.email=u@x", "commit", "-qm", "s"], cwd=work, check=True)
    user_git = git_dir_state(work)
    store = CaptureStore(tmp_path / "captures.git")
    only = os.environ.get("TRIAL_SEED")
    seeds = [int(only)] if only else range(half, TRIALS, HALVES)
    for seed in seeds:
        rng = random.Random(seed)
        before = store.capture(work)
        expected, _ = _split(tree_state(work))
        _run(work, _agent_script(rng, work))
        after = store.capture(work)
        changed_by_agent = {c.path for c in store.changes(before.commit, after.commit)}
        hand = _hand_edit(rng, work, tree_state(work)) if rng.random() < 0.3 else None
        _, ignored_then = _split(tree_state(work))
        report = store.restore(work, before.commit)
        now, ignored_now = _split(tree_state(work))
        assert ignored_now == ignored_then, f"seed {seed}: an ignored file was touched"
        if hand is not None and (hand in changed_by_agent or hand in expected):
            reverted = hand in changed_by_agent or hand not in expected
            assert report.kept == ([hand] if reverted or hand in expected else []), f"seed {seed}: {report}"
            if hand in report.kept:
                assert (work / hand).read_bytes().endswith(b"edited by hand\n"), f"seed {seed}"
                now.pop(hand)
                expected = {p: v for p, v in expected.items() if p != hand}
        assert not report.not_restorable, f"seed {seed}: {report.not_restorable}"
        assert now == expected, f"seed {seed}: the tree differs after the rewind"
        if hand is not None:  # the next trial starts from what is on disk, hand edit included
            store.restore(work, store.capture(work).commit, overwrite_hand_edits=True)
    assert git_dir_state(work) == user_git
    assert store.check() == []
