"""N3: file tools cannot be led out of the working directory (a folder swapped for a symlink mid-call
included); programs see no secrets; ``shell`` and Codemode run in the sandbox (read-only outside the
working directory, private /tmp, no network unless allowed).

Counts of escapes tried and escapes that worked are printed (``pytest -s``); the latter must be 0.
The sandbox tests need bubblewrap (``scripts/setup-sandbox``); ANYY_TEST_NO_SANDBOX=1 skips them on a
machine that cannot have it, by choice, never silently.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest

from anyy.tools.base import ToolContext
from anyy.tools.codemode import RunScriptTool
from anyy.tools.environment import tool_environment
from anyy.tools.files import ReadFileTool, WriteFileTool
from anyy.tools.policy import ToolPolicy
from anyy.tools.sandbox import detect_sandbox
from anyy.tools.shell import ShellTool
from tests.security.conftest import Internal

pytestmark = pytest.mark.anyio

ROUNDS = 150


def _swapper(workdir: Path, outside: Path, stop: threading.Event) -> threading.Thread:
    """Swaps ``work/sub`` between a real folder and a symlink to ``outside`` as fast as it can."""
    sub, parked = workdir / "sub", workdir / "parked"

    def reset() -> None:  # write_file recreated the missing folder meanwhile: put the real one back
        with contextlib.suppress(OSError):
            if sub.is_symlink():
                sub.unlink()
            elif sub.is_dir() and parked.exists():
                shutil.rmtree(sub)
            if parked.exists() and not sub.exists():
                parked.rename(sub)

    def run() -> None:
        while not stop.is_set():
            try:
                os.rename(sub, parked)
                os.symlink(outside, sub)
                os.unlink(sub)
                os.rename(parked, sub)
            except OSError:
                reset()

    (workdir / "sub").mkdir()
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


async def test_n3_file_tools_stay_inside_while_a_folder_is_swapped_for_a_symlink(
    context: ToolContext, workdir: Path, outside: Path
) -> None:
    stop = threading.Event()
    thread = _swapper(workdir, outside, stop)
    tried = leaked_reads = 0
    try:
        for round_ in range(ROUNDS):
            tried += 2
            await WriteFileTool().run({"path": f"sub/w{round_}.txt", "content": "x"}, context)
            read = await ReadFileTool().run({"path": "sub/secret.txt"}, context)
            leaked_reads += "secret" in read.text and not read.is_error
    finally:
        stop.set()
        await asyncio.to_thread(thread.join, 10)
    written_outside = [name for name in os.listdir(outside) if name != "secret.txt"]
    worked = leaked_reads + len(written_outside)
    print(f"\nN3 symlink swap race: escapes tried {tried}, escapes that worked {worked}")
    assert worked == 0, written_outside
    assert any(name.startswith("w") for name in os.listdir(workdir / "sub"))  # the writes did land inside


def test_n3_the_tool_environment_withholds_secrets_unless_passed_through() -> None:
    secrets = [
        "OPENAI_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "MY_SERVICE_KEY", "GITHUB_TOKEN", "SLACK_BOT_TOKEN",
        "DB_PASSWORD", "CLIENT_SECRET", "SECRET_SAUCE", "AWS_SECRET_ACCESS_KEY", "AWS_ACCESS_KEY_ID",
        "CUSTOM_LLM", "PGPASSWORD", "api_key", "HF_TOKEN", "GOOGLE_APPLICATION_CREDENTIALS",
    ]  # fmt: skip
    harmless = ["PATH", "HOME", "LANG", "TERM", "EDITOR", "KEYBOARD_LAYOUT", "MONKEY", "USER"]
    environ = dict.fromkeys([*secrets, *harmless], "value")
    kept = tool_environment(environ, withheld={"CUSTOM_LLM"})
    leaked = sorted(set(kept) - set(harmless))
    print(f"\nN3 secret filter: secrets offered {len(secrets)}, secrets passed {len(leaked)}")
    assert leaked == []
    assert {"PATH", "HOME", "KEYBOARD_LAYOUT", "MONKEY"} <= set(kept)  # not everything with KEY in it
    passed = tool_environment(environ, pass_through={"GITHUB_TOKEN"})
    assert passed["GITHUB_TOKEN"] == "value"
    assert "OPENAI_KEY" not in passed


@pytest.fixture
def visible_outside() -> Iterator[Path]:
    """A folder outside the working directory and outside /tmp (which the sandbox replaces)."""
    path = Path.home() / ".cache" / "anyy-tests" / f"outside-{uuid.uuid4().hex}"
    path.mkdir(parents=True)
    (path / "secret.txt").write_text("secret\n")
    yield path
    shutil.rmtree(path)


@pytest.fixture
def sandboxed(context: ToolContext) -> ToolContext:
    if os.environ.get("ANYY_TEST_NO_SANDBOX") == "1":
        pytest.skip("ANYY_TEST_NO_SANDBOX=1: the sandbox tests were turned off by choice")
    sandbox = detect_sandbox()
    assert sandbox.active, f"{sandbox.note} (ANYY_TEST_NO_SANDBOX=1 skips these tests by choice)"
    return msgspec.structs.replace(context, policy=ToolPolicy(sandbox=sandbox))


async def test_n3_shell_in_the_sandbox_cannot_write_outside_or_reach_the_network(
    sandboxed: ToolContext, workdir: Path, visible_outside: Path, internal: Internal, tmp_path: Path
) -> None:
    outside = visible_outside
    marker = f"anyy-escape-{uuid.uuid4().hex}"
    escapes = {
        "write outside": f"echo x > {outside}/planted.txt",
        "overwrite outside": f"echo pwned > {outside}/secret.txt",
        "write beside": f"touch {tmp_path}/{marker}",
        "host /tmp": f"touch /tmp/{marker}",
        "network": f"exec 3<>/dev/tcp/127.0.0.1/{internal.port} && echo -e 'GET /shell HTTP/1.0\\r\\n' >&3",
        "remove outside": f"rm -f {outside}/secret.txt",
    }  # fmt: skip
    for command in escapes.values():
        await ShellTool().run({"command": command}, sandboxed)
    secret = outside / "secret.txt"
    worked = [
        name
        for name, happened in {
            "write outside": (outside / "planted.txt").exists(),
            "overwrite outside": secret.exists() and secret.read_text() != "secret\n",
            "write beside": (tmp_path / marker).exists(),
            "host /tmp": Path("/tmp", marker).exists(),
            "network": bool(internal.hits),
            "remove outside": not secret.exists(),
        }.items()
        if happened
    ]
    print(f"\nN3 shell sandbox: escapes tried {len(escapes)}, escapes that worked {len(worked)} {worked}")
    assert worked == []
    host_file = Path("/tmp", f"{marker}-host")
    host_file.write_text("host")
    try:
        inside = await ShellTool().run({"command": "echo kept > made.txt && cat made.txt && ls /tmp"}, sandboxed)
    finally:
        host_file.unlink()
    assert not inside.is_error, inside.text
    assert (workdir / "made.txt").read_text() == "kept\n"
    assert inside.text.startswith("kept\n")
    assert host_file.name not in inside.text  # a private /tmp


async def test_n3_sandbox_network_only_when_allowed(sandboxed: ToolContext, internal: Internal) -> None:
    allowed = msgspec.structs.replace(
        sandboxed, policy=ToolPolicy(sandbox=msgspec.structs.replace(sandboxed.policy.sandbox, network=True))
    )
    command = f"exec 3<>/dev/tcp/127.0.0.1/{internal.port} && printf 'GET /allowed HTTP/1.0\\r\\n\\r\\n' >&3 && cat <&3"
    outcome = await ShellTool().run({"command": command}, allowed)
    assert "internal secret" in outcome.text, outcome.text
    assert internal.hits == ["/allowed"]


async def test_n3_codemode_scripts_run_in_the_sandbox(sandboxed: ToolContext, visible_outside: Path) -> None:
    outside = visible_outside
    script = (
        "import pathlib\n"
        f"try:\n    pathlib.Path({str(outside)!r}, 'planted.txt').write_text('x')\n"
        "except OSError as error:\n    print('refused', error.errno)\n"
        "pathlib.Path('inside.txt').write_text('ok')\n"
        "print(tools.read_file(path='inside.txt'))\n"
    )
    outcome = await RunScriptTool({"read_file": ReadFileTool()}).run({"script": script}, sandboxed)
    assert not outcome.is_error, outcome.text
    assert "refused 30" in outcome.text  # EROFS
    assert "ok" in outcome.text
    print(f"\nN3 Codemode sandbox: escapes tried 1, escapes that worked {int((outside / 'planted.txt').exists())}")
    assert not (outside / "planted.txt").exists()
