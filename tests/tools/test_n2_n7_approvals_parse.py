"""N2, N7 through the runtime: shell rules match every command of the parsed line, path rules the canonical
path (decided again at write time), and Codemode obeys the shell rule. Each case was a bypass before."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import msgspec
import pytest

from anyy.domain.entries import EntryKind
from anyy.domain.sessions import Session
from anyy.profiles.profile import Profile
from anyy.runtime.assembly import new_session
from anyy.runtime.deps import Deps
from anyy.runtime.runtime import Runtime
from anyy.tools.approval_rules import ApprovalRules
from anyy.tools.base import ToolContext
from anyy.tools.policy import ToolPolicy
from anyy.tools.toolset import build_tools
from tests.fakes.model_server import FakeModelServer, Reply, ToolCall
from tests.tools.test_n2_approvals import _profile as _base_profile
from tests.tools.test_n2_approvals import _runtime, _send, _until

RULES = """
[tools.approval]
shell = { "git status*" = "allow", "*" = "ask" }
write_file = { "src/*" = "allow", "*" = "ask" }
"""


def _profile(tmp_path: Path, server: FakeModelServer) -> Profile:
    profile = _base_profile(tmp_path, server, RULES)
    (tmp_path / "work" / "src").mkdir(parents=True, exist_ok=True)
    (tmp_path / "work" / ".git" / "hooks").mkdir(parents=True, exist_ok=True)
    return profile


async def _session(deps: Deps, profile: Profile, *, codemode: bool = False) -> Session:
    tools = {"enabled": ["shell", "write_file", "read_file"], "codemode": codemode}
    spec = msgspec.structs.replace(new_session(profile.load_config()), provider="fake", model="m", tools=tools)
    return await deps.owner.call(lambda s: s.create_session(spec))


async def _question(deps: Deps, session: Session) -> str:
    path = await deps.owner.call(lambda s: s.path(session.id))
    return [e for e in path if e.kind == EntryKind.QUESTION][-1].text


async def _each_asks(runtime: Runtime, deps: Deps, session: Session, count: int, check: Any = None) -> list[str]:
    """Send one message; the model's ``count`` calls each suspend the execution; deny each. The requests."""
    asked = await _send(runtime, deps, session, "go", "suspended", "completed", "failed")
    questions = []
    for _ in range(count):
        assert asked.state == "suspended"
        questions.append(await _question(deps, session))
        nxt = asyncio.create_task(_until(deps, session, "suspended", "completed", "failed"))
        await asyncio.sleep(0)
        await runtime.approve(session.id, asked.execution_id, "deny")
        asked = await nxt
    assert asked.state == "completed"
    return questions


def test_n2_n7_a_command_beside_an_allowed_one_asks(tmp_path: Path, server: FakeModelServer) -> None:
    lines = ["git status; touch M", "git status$(touch M)", "git status && bash -c 'touch M'", "git status\ntouch M"]
    server.enqueue(*[Reply(tool_calls=[ToolCall("shell", {"command": line})]) for line in lines], Reply(text=["No."]))
    profile = _profile(tmp_path, server)

    async def scenario() -> list[str]:
        async with _runtime(profile, tmp_path / "work") as (runtime, deps):
            return await _each_asks(runtime, deps, await _session(deps, profile), len(lines))

    questions = asyncio.run(scenario())
    assert not (tmp_path / "work" / "M").exists()
    assert questions[0] == (
        "Approval needed: shell 'git status; touch M'\n"
        "Decision: ask, because 'touch M' matches the rule '*' = ask.\n"
        "Commands it runs:\n"
        "- 'git status': allowed by 'git status*'\n"
        "- 'touch M': ask by '*'\n"
        "Answer once (run it this time), session (allow exactly this for the rest of the session) or deny."
    )
    assert all("- 'touch M': ask by '*'" in question for question in questions)


def test_n2_n7_a_path_is_matched_canonical(tmp_path: Path, server: FakeModelServer) -> None:
    work = tmp_path / "work"
    server.enqueue(
        Reply(tool_calls=[ToolCall("write_file", {"path": "src/ok.txt", "content": "fine"})]),
        Reply(tool_calls=[ToolCall("write_file", {"path": "src/../.git/hooks/pre-commit", "content": "evil"})]),
        Reply(tool_calls=[ToolCall("write_file", {"path": "src/hooks/pre-commit", "content": "evil"})]),
        Reply(tool_calls=[ToolCall("write_file", {"path": str(work / "src/./../.git/config"), "content": "x"})]),
        Reply(text=["No."]),
    )
    profile = _profile(tmp_path, server)
    os.symlink("../.git/hooks", work / "src" / "hooks")

    async def scenario() -> list[str]:
        async with _runtime(profile, work) as (runtime, deps):
            return await _each_asks(runtime, deps, await _session(deps, profile), 3)

    questions = asyncio.run(scenario())
    assert (work / "src" / "ok.txt").read_text() == "fine"  # allowed: ran without a question
    assert not (work / ".git" / "hooks" / "pre-commit").exists()
    assert not (work / ".git" / "config").exists()
    assert questions[0].startswith(
        "Approval needed: write_file '.git/hooks/pre-commit' (asked as 'src/../.git/hooks/pre-commit')\n"
        "Decision: ask, because it matches the rule '*' = ask."
    )
    assert questions[1].startswith("Approval needed: write_file '.git/hooks/pre-commit' (asked as 'src/hooks/")
    assert questions[2].startswith("Approval needed: write_file '.git/config'")


def test_n2_n7_a_symlink_swapped_while_the_user_reads_is_asked_again(tmp_path: Path, server: FakeModelServer) -> None:
    work = tmp_path / "work"
    server.enqueue(
        Reply(tool_calls=[ToolCall("write_file", {"path": "notes.txt", "content": "evil"})]), Reply(text=["Ok."])
    )
    profile = _profile(tmp_path, server)

    async def scenario() -> str:
        async with _runtime(profile, work) as (runtime, deps):
            session = await _session(deps, profile)
            asked = await _send(runtime, deps, session, "go", "suspended")
            assert (await _question(deps, session)).startswith("Approval needed: write_file 'notes.txt'\n")
            os.symlink(".git/hooks/pre-commit", work / "notes.txt")  # swapped while the user reads
            again = asyncio.create_task(_until(deps, session, "suspended", "completed", "failed"))
            await asyncio.sleep(0)
            await runtime.approve(session.id, asked.execution_id, "once")
            assert (await again).state == "suspended"
            return await _question(deps, session)

    question = asyncio.run(scenario())
    assert question.startswith("Approval needed: write_file '.git/hooks/pre-commit' (asked as 'notes.txt')")
    assert not (work / ".git" / "hooks" / "pre-commit").exists()


@pytest.mark.anyio
async def test_n2_n7_the_file_written_is_decided_at_write_time(tmp_path: Path) -> None:
    """The gate approved ``src/x.txt``; a symlink swapped in before the write leads elsewhere: refused, and
    nothing is written there."""
    (tmp_path / "src").mkdir()
    (tmp_path / ".git" / "hooks").mkdir(parents=True)
    os.symlink("../.git/hooks/pre-commit", tmp_path / "src" / "x.txt")
    rules = ApprovalRules.from_config({"write_file": {"src/*": "allow", "*": "ask"}, "edit_file": {"*": "deny"}})
    context = ToolContext(
        workdir=tmp_path, memory_dir=tmp_path, session_id="s", policy=ToolPolicy(approval=rules), approved="src/x.txt"
    )
    tools = build_tools(["write_file", "edit_file"], codemode=False)
    outcome = await tools.run("write_file", {"path": "src/x.txt", "content": "evil"}, context)
    assert outcome.is_error
    assert "now leads to '.git/hooks/pre-commit', not to 'src/x.txt'" in outcome.text
    assert not (tmp_path / ".git" / "hooks" / "pre-commit").exists()
    (tmp_path / ".git" / "hooks" / "pre-commit").write_text("old")
    outcome = await tools.run("edit_file", {"path": "src/x.txt", "old_text": "old", "new_text": "evil"}, context)
    assert outcome.is_error
    assert (tmp_path / ".git" / "hooks" / "pre-commit").read_text() == "old"
    # The path approved is written as before.
    (tmp_path / "src" / "x.txt").unlink()
    assert not (await tools.run("write_file", {"path": "src/x.txt", "content": "ok"}, context)).is_error
    assert (tmp_path / "src" / "x.txt").read_text() == "ok"


SCRIPTS = [
    "import subprocess\nsubprocess.run(['touch', 'M'])",
    "import os\nos.system('touch M')",
    "import os\nopen('x.sh', 'w').write('#!/bin/sh\\ntouch M\\n')\nos.chmod('x.sh', 0o755)\n"
    "os.execv('./x.sh', ['x.sh'])",
    "import pty\npty.spawn(['touch', 'M'])",
    "import ctypes\nctypes.CDLL(None).system(b'touch M')",
]


def test_n2_n7_codemode_does_not_walk_around_shell_ask(tmp_path: Path, server: FakeModelServer) -> None:
    server.enqueue(
        *[Reply(tool_calls=[ToolCall("run_script", {"script": script})]) for script in SCRIPTS], Reply(text=["No."])
    )
    profile = _profile(tmp_path, server)

    async def scenario() -> list[str]:
        async with _runtime(profile, tmp_path / "work") as (runtime, deps):
            return await _each_asks(runtime, deps, await _session(deps, profile, codemode=True), len(SCRIPTS))

    questions = asyncio.run(scenario())
    assert not (tmp_path / "work" / "M").exists()
    assert not (tmp_path / "work" / "x.sh").exists()
    for question, script in zip(questions, SCRIPTS, strict=True):
        assert question.startswith(f"Approval needed: run_script {script!r}\n")  # the whole script is shown
        assert "Decision: ask, because a script can start any program, and the shell rule is not a plain allow." in (
            question
        )


def test_n2_n7_an_approved_script_still_meets_the_parsed_shell_rules(tmp_path: Path, server: FakeModelServer) -> None:
    """The user approves the script once; its own tools.shell calls are decided command by command."""
    script = (
        "for line in ['echo one; rm -rf keep', 'echo two && touch M']:\n"
        "    try:\n"
        "        print(tools.shell(command=line))\n"
        "    except ToolError as error:\n"
        "        print('refused:', error)\n"
    )
    server.enqueue(Reply(tool_calls=[ToolCall("run_script", {"script": script})]), Reply(text=["Done."]))
    profile = _base_profile(tmp_path, server, '[tools.approval]\nshell = { "rm *" = "deny", "echo *" = "allow" }\n')
    (tmp_path / "work" / "keep").mkdir(parents=True)

    async def scenario() -> None:
        async with _runtime(profile, tmp_path / "work") as (runtime, deps):
            session = await _session(deps, profile, codemode=True)
            asked = await _send(runtime, deps, session, "go", "suspended")
            assert "the shell rule is not a plain allow" in await _question(deps, session)
            done = asyncio.create_task(_until(deps, session, "completed", "failed"))
            await asyncio.sleep(0)
            await runtime.approve(session.id, asked.execution_id, "once")
            assert (await done).state == "completed"

    asyncio.run(scenario())
    assert (tmp_path / "work" / "keep").is_dir()
    [result] = [m["content"] for m in server.received[1].body["messages"] if m["role"] == "tool"]
    assert "refused: Denied: the profile's approval rules deny shell (the command 'rm -rf keep'" in result
    assert "two" in result
    assert (tmp_path / "work" / "M").exists()  # touch M matches no rule: allowed
