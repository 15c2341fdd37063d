"""W2/W3 end to end through a Gateway: the offline model's ``write FILE: TEXT`` and ``run: COMMAND`` change
the workspace; ``session.files.diff`` shows each turn's change; ``session.navigate`` previews and restores
the files of an earlier entry, keeps a file changed by hand (and says so), and the user's own ``.git`` is
byte-identical before and after."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from tests.fakes.gateways import LiveGateway
from tests.workspaces.tree_state import git_dir_state, tree_state

TIMEOUT = 30


def _turn(live: LiveGateway, session_id: str, text: str) -> None:
    sent = live.call("session.send", {"session_id": session_id, "text": text})
    state = live.call("session.wait", {"submission_id": sent["id"], "timeout": TIMEOUT})["state"]
    assert state == "completed"


def _path(live: LiveGateway, session_id: str) -> list[dict[str, Any]]:
    return list(reversed(live.call("session.history", {"session_id": session_id, "limit": 200})["items"]))


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def test_w3_rewind_through_the_gateway_restores_files_and_keeps_hand_edits(tmp_path: Path) -> None:
    with LiveGateway(tmp_path, scripted_only=False) as live:
        work = live.workdir
        (work / "keep.txt").write_text("the user's file\n")
        (work / ".gitignore").write_text("*.log\n")
        _git(work, "init", "-q")
        _git(work, "add", "-A")
        _git(work, "-c", "user.name=u", "-c", "user.email=u@x", "commit", "-qm", "start")
        user_git = git_dir_state(work)
        session_id = live.call("session.create")["id"]
        live.call("session.tools.configure", {"session_id": session_id, "enabled": ["write_file", "shell"]})
        start = tree_state(work)

        _turn(live, session_id, "write a.txt: first version")
        after_first = tree_state(work)
        _turn(live, session_id, "run: echo more >> a.txt && mkdir -p d && echo b > d/b.txt && rm keep.txt")
        _turn(live, session_id, "run: echo noise > run.log && chmod +x d/b.txt && ln -s a.txt link")
        assert (work / "link").is_symlink()

        entries = _path(live, session_id)
        users = [e for e in entries if e["kind"] == "user"]
        second_turn_end = [e for e in entries if e["kind"] == "tool_result"][1]
        diff = live.call("session.files.diff", {"session_id": session_id, "entry_id": second_turn_end["id"]})
        assert diff["changed"] == ["a.txt"]
        assert diff["added"] == ["d/b.txt"]
        assert diff["removed"] == ["keep.txt"]
        assert "+first versionmore" in diff["text"]
        assert "-the user's file" in diff["text"]
        whole = live.call("session.files.diff", {"session_id": session_id})
        assert sorted(whole["added"]) == ["a.txt", "d/b.txt", "link"]

        # By hand, after the agent's last capture: a new line in a.txt.
        (work / "a.txt").write_text("first versionmore\nby hand\n")
        preview = live.call(
            "session.navigate", {"session_id": session_id, "entry_id": users[1]["id"], "files": "preview"}
        )["files"]
        assert preview["hand_edited"] == ["a.txt"]
        assert sorted(preview["removed"]) == ["d/b.txt", "link"]
        assert preview["added"] == ["keep.txt"]
        assert tree_state(work)["a.txt"] != after_first["a.txt"]  # a preview moves nothing
        done = live.call("session.navigate", {"session_id": session_id, "entry_id": users[1]["id"], "files": "restore"})
        assert done["files"]["kept"] == ["a.txt"]
        assert (work / "a.txt").read_text() == "first versionmore\nby hand\n"  # the hand edit is kept
        now = tree_state(work)
        expected = dict(after_first)
        expected["a.txt"] = now["a.txt"]
        expected["run.log"] = now["run.log"]  # ignored by the workspace's .gitignore: never touched
        assert now == expected
        assert done["session"]["head"] == users[1]["id"]

        # The state the rewind left was captured: going back to the last entry restores it (by choice, the
        # hand edit too), and rewinding to the very start gives the user's tree back.
        last = entries[-1]["id"]
        back = live.call(
            "session.navigate",
            {"session_id": session_id, "entry_id": last, "files": "restore", "overwrite_hand_edits": True},
        )
        assert back["files"]["kept"] == []
        assert (work / "link").is_symlink()
        assert (work / "d" / "b.txt").exists()
        live.call("session.navigate", {"session_id": session_id, "entry_id": users[0]["id"], "files": "restore"})
        assert tree_state(work) == {**start, "run.log": now["run.log"]}
        assert git_dir_state(work) == user_git  # the user's index, HEAD, refs and objects: untouched


def test_w2_a_pass_of_read_only_tools_is_not_captured(tmp_path: Path) -> None:
    with LiveGateway(tmp_path, scripted_only=False) as live:
        (live.workdir / "a.txt").write_text("read me\n")
        session_id = live.call("session.create")["id"]
        live.call("session.tools.configure", {"session_id": session_id, "enabled": ["read_file", "write_file"]})
        assert live.gateway is not None
        gateway = live.gateway
        _turn(live, session_id, "read a.txt")
        assert live.run(gateway.store(lambda s: s.file_capture_commits())) == set()
        _turn(live, session_id, "write b.txt: two")
        kinds = live.run(
            gateway.store(
                lambda s: [c.kind for c in s.list_file_captures(entry_ids=[e.id for e in s.path(session_id)])]
            )
        )
        assert kinds == ["before", "after"]
