"""N7: the sandbox holds whoever runs the Gateway (root here): no capabilities, no mounts, no host
sysctls, nothing written outside the working directory; the anyy home and the user's credentials are
hidden from programs and refused by the file tools; ``[tools.sandbox] hide`` hides more; Codemode's
interpreter is confined the same way; a sandbox that runs with less, or not at all, says so in every result.

A real Gateway (``anyy gateway start``, the offline model's ``run:``/``read``/``write`` cues) runs in a
test HOME whose ``~/.ssh/id_rsa`` is fake; everything lives under /var/tmp, outside the private /tmp the
sandbox shows, so that each path is visible to a sandbox that does not hide it. Counts of escapes tried
and escapes that worked are printed (``pytest -s``); the latter must be 0.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec
import pytest

from anyy.tools.base import ToolContext
from anyy.tools.codemode import RunScriptTool
from anyy.tools.files import ListDirTool, ReadFileTool
from anyy.tools.policy import ToolPolicy
from anyy.tools.sandbox import detect_sandbox
from anyy.tools.shell import ShellTool
from tests.fakes.gateways import ANYY, PROCESS_TIMEOUT, GatewayProcess

pytestmark = pytest.mark.anyio

NO_CAPABILITIES = "CapEff:\t0000000000000000"


@dataclass
class Machine:
    """A test HOME (the working directory), an anyy home and folders around them, under /var/tmp."""

    base: Path
    user: Path  # HOME, and the Gateway's working directory
    anyy_home: Path
    outside: Path  # visible, not hidden: where an escape would write
    elsewhere: Path  # hidden by the profile's [tools.sandbox] hide
    key: str  # the fake private key's content
    private: str  # the content of ~/private/notes.txt, hidden by [tools.sandbox] hide

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in ("ANYY_PROFILE", "ANYY_HOME", "SSH_AUTH_SOCK")}
        return {**env, "ANYY_HOME": str(self.anyy_home), "HOME": str(self.user)}

    def anyy(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [ANYY, *args],
            capture_output=True,
            text=True,
            env=self.env(),
            cwd=self.user,
            timeout=PROCESS_TIMEOUT,
            check=False,
        )


def _base() -> Path:
    base = Path("/var/tmp")
    if not (base.is_dir() and os.access(base, os.W_OK)):
        base = Path.home() / ".cache"
    return base / f"anyy-n7-{uuid.uuid4().hex[:12]}"


def _make_machine() -> Machine:
    base = _base()
    user, anyy_home = base / "user", base / "anyy-home"
    ssh = user / ".ssh"
    ssh.mkdir(parents=True, mode=0o700)
    key = f"-----BEGIN OPENSSH PRIVATE KEY----- n7-key-{uuid.uuid4().hex}"
    (ssh / "id_rsa").write_text(key + "\n")
    (ssh / "id_rsa").chmod(0o600)
    (user / "private").mkdir()
    private = f"n7-private-{uuid.uuid4().hex}"
    (user / "private" / "notes.txt").write_text(private + "\n")
    (user / "aws").mkdir()
    (user / "aws" / "credentials").write_text("[default]\naws_secret_access_key = n7\n")
    (user / ".aws").symlink_to(user / "aws")  # a credential folder reached through a symlink
    outside, elsewhere = base / "outside", base / "elsewhere"
    outside.mkdir()
    elsewhere.mkdir()
    (elsewhere / "secret.txt").write_text(private + "\n")
    return Machine(
        base=base, user=user, anyy_home=anyy_home, outside=outside, elsewhere=elsewhere, key=key, private=private
    )


@pytest.fixture(scope="module")
def machine() -> Iterator[Machine]:
    if os.environ.get("ANYY_TEST_NO_SANDBOX") == "1":
        pytest.skip("ANYY_TEST_NO_SANDBOX=1: the sandbox tests were turned off by choice")
    made = _make_machine()
    try:
        yield made
    finally:
        shutil.rmtree(made.base, ignore_errors=True)


@pytest.fixture(scope="module")
def gateway(machine: Machine) -> Iterator[GatewayProcess]:
    """The test HOME's Gateway: a profile hiding ``~/private`` and the folder ``elsewhere``."""
    created = machine.anyy("profile", "create", "default")
    assert created.returncode == 0, created.stderr
    config = machine.anyy_home / "profiles" / "default" / "config.toml"
    hide = json.dumps(["~/private", str(machine.elsewhere)])
    config.write_text(config.read_text() + f"\n[tools.sandbox]\nhide = {hide}\n")
    started = machine.anyy("gateway", "start")
    assert started.returncode == 0, started.stderr
    try:
        yield GatewayProcess(home=machine.anyy_home, profile="default")
    finally:
        machine.anyy("gateway", "stop")


def _tool_result(machine: Machine, gateway: GatewayProcess, cue: str) -> str:
    """The text of the one tool result of a turn that sends ``cue`` to the offline model."""
    done = machine.anyy("chat", "--json", cue)
    assert done.stdout, f"no JSON on stdout (exit {done.returncode}): {done.stderr}"
    session_id = json.loads(done.stdout)["session_id"]
    with gateway.client() as client:
        items: list[dict[str, Any]] = client.call("session.history", {"session_id": session_id})["items"]
    results = [str(item["text"]) for item in items if item["kind"] == "tool_result"]
    assert len(results) == 1, items
    return results[0]


def test_n7_root_gateway_shell_cannot_remount_write_outside_or_keep_capabilities(
    machine: Machine, gateway: GatewayProcess
) -> None:
    planted = machine.outside / "planted.txt"
    command = (
        "grep CapEff /proc/self/status; "
        "mount -o remount,rw / && echo REMOUNTED; "
        f"echo x > {planted} && echo PLANTED; "
        "v=$(cat /proc/sys/vm/stat_interval) && echo $v > /proc/sys/vm/stat_interval && echo SYSCTL_WRITTEN; "
        "unshare -U -r true && echo NEW_USER_NAMESPACE; "
        "echo inside > made-inside.txt && echo WROTE_INSIDE"
    )
    text = _tool_result(machine, gateway, f"run: {command}")
    escapes = {"capabilities": NO_CAPABILITIES not in text, "write outside": planted.exists()}
    escapes |= {marker: marker in text for marker in ("REMOUNTED", "SYSCTL_WRITTEN", "NEW_USER_NAMESPACE")}
    worked = [name for name, happened in escapes.items() if happened]
    print(f"\nN7 root sandbox (uid {os.geteuid()}): escapes tried {len(escapes)}, escapes that worked {worked}")
    assert worked == [], text
    assert "WROTE_INSIDE" in text  # the working directory stays writable
    assert (machine.user / "made-inside.txt").read_text() == "inside\n"


def test_n7_shell_cannot_read_the_anyy_home_or_credentials(machine: Machine, gateway: GatewayProcess) -> None:
    profile = machine.anyy_home / "profiles" / "default"
    token = json.loads((profile / "gateway.json").read_text())["token"]
    assert (profile / "state.db").exists()
    command = (
        f"cat {profile}/gateway.json; head -c 15 {profile}/state.db; echo; ls -a {profile}; "
        "cat ~/.ssh/id_rsa; cat ~/.aws/credentials; cat ~/private/notes.txt; "
        f"cat {machine.elsewhere}/secret.txt; ls /run"
    )
    text = _tool_result(machine, gateway, f"run: {command}")
    leaks = {
        "gateway.json token": token in text,
        "state.db": "SQLite format" in text,
        "profile listing": "config.toml" in text,
        "~/.ssh/id_rsa": machine.key in text,
        "~/.aws through a symlink": "aws_secret_access_key" in text,
        "[tools.sandbox] hide": machine.private in text,
        "local services' sockets (/run)": "postgresql" in text or "dbus" in text,
    }
    worked = [name for name, leaked in leaks.items() if leaked]
    print(f"\nN7 hidden paths (shell): reads tried {len(leaks)}, reads that worked {worked}")
    assert worked == [], text


def test_n7_file_tools_refuse_hidden_paths(machine: Machine, gateway: GatewayProcess) -> None:
    (machine.user / "innocent-link").symlink_to(".ssh/id_rsa")
    tries = {
        "read ~/.ssh/id_rsa": "read .ssh/id_rsa",
        "read through a symlink": "read innocent-link",
        "read [tools.sandbox] hide": "read private/notes.txt",
        "read ~/.aws through a symlink": "read .aws/credentials",
        "write ~/.ssh/authorized_keys": "write .ssh/authorized_keys: ssh-ed25519 AAAA attacker",
    }
    texts = {name: _tool_result(machine, gateway, cue) for name, cue in tries.items()}
    worked = [
        name
        for name, text in texts.items()
        if "hidden from tools" not in text or machine.key in text or machine.private in text
    ]
    worked += ["authorized_keys written"] if (machine.user / ".ssh" / "authorized_keys").exists() else []
    print(f"\nN7 hidden paths (file tools): tries {len(tries)}, tries that worked {worked}")
    assert worked == [], texts
    assert "created visible.txt" in _tool_result(machine, gateway, "write visible.txt: fine")  # others still work
    assert (machine.user / "visible.txt").read_text() == "fine"


def test_n7_gateway_status_says_what_the_sandbox_holds(machine: Machine, gateway: GatewayProcess) -> None:
    with gateway.client() as client:
        note = client.call("gateway.status")["sandbox"]
    assert note.startswith("bubblewrap: working directory writable"), note
    assert "no capabilities" in note
    assert "the anyy home and credentials hidden" in note
    assert "degraded" not in note  # this machine has user namespaces and libseccomp


# -- the tools themselves, where a Gateway cannot show it -----------------------------------------------


@pytest.fixture
def sandboxed(machine: Machine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ToolContext:
    monkeypatch.setenv("HOME", str(machine.user))  # ~ in the hidden paths is the Gateway user's home
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    sandbox = detect_sandbox(anyy_home=machine.anyy_home)
    assert sandbox.active, sandbox.note
    return ToolContext(
        workdir=machine.user,
        memory_dir=tmp_path / "memory",
        session_id="ses_n7",
        timeout=30,
        policy=ToolPolicy(sandbox=sandbox),
        env={**os.environ, "HOME": str(machine.user)},
    )


async def test_n7_codemode_interpreter_is_confined_like_shell(machine: Machine, sandboxed: ToolContext) -> None:
    machine.anyy_home.mkdir(parents=True, exist_ok=True)
    (machine.anyy_home / "n7-token.txt").write_text("n7-home-secret\n")
    planted = machine.outside / "from-script.txt"
    script = f"""
import ctypes, os, pathlib, subprocess
status = pathlib.Path("/proc/self/status").read_text()
print([line for line in status.splitlines() if line.startswith("CapEff")][0])
for path in ({str(machine.anyy_home / "n7-token.txt")!r}, {str(machine.user / ".ssh" / "id_rsa")!r}):
    try:
        print("READ", pathlib.Path(path).read_text())
    except OSError as error:
        print("refused", path, error.strerror)
try:
    pathlib.Path({str(planted)!r}).write_text("x")
    print("PLANTED")
except OSError as error:
    print("refused write", error.strerror)
libc = ctypes.CDLL(None, use_errno=True)
if libc.mount(b"none", b"/", None, 32, None) == 0:  # MS_REMOUNT, read-write
    print("REMOUNTED")
if libc.unshare(0x10000000) == 0:  # CLONE_NEWUSER
    print("NEW_USER_NAMESPACE")
done = subprocess.run(["cat", {str(machine.user / ".ssh" / "id_rsa")!r}], capture_output=True, text=True)
print("child", done.returncode, done.stdout)
"""
    outcome = await RunScriptTool({}).run({"script": script}, sandboxed)
    text = outcome.text
    escapes = {
        "capabilities": NO_CAPABILITIES not in text,
        "anyy home": "n7-home-secret" in text,
        "ssh key": machine.key in text,
        "write outside": planted.exists() or "PLANTED" in text,
        "remount": "REMOUNTED" in text,
        "user namespace": "NEW_USER_NAMESPACE" in text,
    }
    worked = [name for name, happened in escapes.items() if happened]
    print(f"\nN7 Codemode sandbox: escapes tried {len(escapes)}, escapes that worked {worked}")
    assert worked == [], text
    assert "child 1" in text  # the script's own programs are confined too


async def test_n7_a_hidden_path_never_hides_the_working_directory(machine: Machine, sandboxed: ToolContext) -> None:
    """An entry holding the working directory hides what is around it, shows the working directory and
    says so in every result; list_dir does not open hidden folders."""
    sandbox = detect_sandbox(anyy_home=machine.anyy_home, hide=[str(machine.base)])
    context = msgspec.structs.replace(sandboxed, policy=ToolPolicy(sandbox=sandbox))
    command = f"cat {machine.outside}/../elsewhere/secret.txt; ls {machine.base}; echo kept > kept.txt && cat kept.txt"
    outcome = await ShellTool().run({"command": command}, context)
    assert machine.private not in outcome.text, outcome.text
    assert "kept\n" in outcome.text
    assert f"{machine.base} is hidden from tools but holds the working directory" in outcome.text
    listing = await ListDirTool().run({"path": ".", "depth": 2}, sandboxed)
    assert ".ssh/\n  (hidden from tools)" in listing.text, listing.text
    refused = await ListDirTool().run({"path": ".ssh"}, sandboxed)
    assert refused.is_error
    assert "hidden from tools" in refused.text


def _fake_bwrap(folder: Path, refuse: str) -> Path:
    """A ``bwrap`` in front of the real one that fails as bubblewrap does on a machine refusing ``refuse``
    (an option, or ``*`` for everything)."""
    real = shutil.which("bwrap")
    assert real is not None
    folder.mkdir(parents=True, exist_ok=True)
    fake = folder / "bwrap"
    fake.write_text(
        "#!/bin/sh\n"
        f'for a in "$@"; do case "$a" in {refuse}) echo "bwrap: No permissions to create new namespace" >&2; '
        "exit 1;; esac; done\n"
        f'exec {real} "$@"\n'
    )
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    return folder


@pytest.mark.parametrize(
    ("refuse", "said"),
    [
        ("--unshare-user", "[sandbox degraded: no user namespace (" + "{bwrap} fails on this machine: bwrap: No"),
        ("*", "[ran unconfined: no sandbox ({bwrap} fails on this machine: bwrap: No permissions"),
    ],
)
async def test_n7_a_sandbox_with_less_says_so_in_every_result(
    machine: Machine, sandboxed: ToolContext, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, refuse: str, said: str
) -> None:
    folder = _fake_bwrap(tmp_path / f"bin-{uuid.uuid4().hex[:8]}", refuse)
    monkeypatch.setenv("PATH", f"{folder}:{os.environ['PATH']}")
    sandbox = detect_sandbox(anyy_home=machine.anyy_home)
    context = msgspec.structs.replace(sandboxed, policy=ToolPolicy(sandbox=sandbox))
    outcome = await ShellTool().run({"command": "grep CapEff /proc/self/status; cat ~/.ssh/id_rsa"}, context)
    assert said.format(bwrap=folder / "bwrap") in outcome.text, outcome.text
    if refuse != "*":  # still no capabilities and nothing hidden shown, without the user namespace
        assert NO_CAPABILITIES in outcome.text
        assert machine.key not in outcome.text
    script = await RunScriptTool({}).run({"script": "print('hello')"}, context)
    assert said.format(bwrap=folder / "bwrap") in script.text, script.text
    read = await ReadFileTool().run({"path": ".ssh/id_rsa"}, context)  # refused, sandbox or not
    assert read.is_error
    assert "hidden from tools" in read.text


def test_n7_hide_entries_must_be_absolute(tmp_path: Path) -> None:
    from anyy.profiles.config import load_config

    config = tmp_path / "config.toml"
    config.write_text('[tools.sandbox]\nhide = ["secrets"]\n')
    with pytest.raises(Exception, match=r"hide: 'secrets' is relative: give an absolute path or one under ~/"):
        load_config(config)
    config.write_text('[tools.sandbox]\nhide = ["~/"]\n')
    with pytest.raises(Exception, match=r"hide: '~/' would hide every file"):
        load_config(config)


# The kernel's doors an unprivileged process may still open: the seccomp filter shuts them.
_DOORS = """
import ctypes, os, platform
numbers = {"x86_64": {"add_key": 248, "io_uring_setup": 425}, "aarch64": {"add_key": 217, "io_uring_setup": 425}}
libc = ctypes.CDLL(None, use_errno=True)
calls = numbers[platform.machine()]
params = (ctypes.c_char * 120)()
results = {
    "add_key": libc.syscall(calls["add_key"], b"user", b"anyy-n7", b"x", 1, -2),  # the process keyring
    "io_uring_setup": libc.syscall(calls["io_uring_setup"], 1, params),
}
for name, result in results.items():
    print(name, "OPENED" if result >= 0 else os.strerror(ctypes.get_errno()))
"""


async def test_n7_seccomp_filter_refuses_what_capabilities_do_not(sandboxed: ToolContext) -> None:
    sandbox = sandboxed.policy.sandbox
    assert sandbox.seccomp, sandbox.note  # libseccomp is on this machine (scripts/setup-sandbox)
    command = f"{os.path.realpath(sys.executable)} -c '{_DOORS}'"
    filtered = await ShellTool().run({"command": command}, sandboxed)
    print(f"\nN7 seccomp: {filtered.text.strip()}")
    assert "add_key Operation not permitted" in filtered.text, filtered.text
    assert "io_uring_setup Operation not permitted" in filtered.text
    # The same sandbox without the filter: the calls go through, so the filter is what refuses them.
    unfiltered = msgspec.structs.replace(
        sandboxed, policy=ToolPolicy(sandbox=msgspec.structs.replace(sandbox, seccomp=b""))
    )
    opened = await ShellTool().run({"command": command}, unfiltered)
    assert "add_key OPENED" in opened.text, opened.text


def test_n7_the_sandbox_holds_for_a_non_root_user_too(machine: Machine, monkeypatch: pytest.MonkeyPatch) -> None:
    """The confinement a Gateway builds, run by an unprivileged user (``nobody``, through ``setpriv``): the
    kernel's unprivileged user namespaces carry the same sandbox. (The Gateway itself cannot run as
    ``nobody`` here: its Python lives in root's home.)"""
    setpriv = shutil.which("setpriv")
    if os.geteuid() != 0 or setpriv is None:
        pytest.skip("needs root and setpriv to become another user; a non-root run is that test already")
    work = machine.base / "nobody-work"
    work.mkdir()
    os.chown(work, 65534, 65534)
    monkeypatch.setenv("HOME", str(machine.user))
    sandbox = detect_sandbox(anyy_home=machine.anyy_home)
    command = (
        "id -u; grep -E 'CapEff|Seccomp:' /proc/self/status; touch /etc/n7 || echo REFUSED; "
        "echo 1 > /proc/sys/vm/stat_interval || echo REFUSED; unshare -U true || echo REFUSED; "
        "echo inside > made.txt && echo WROTE"
    )
    with sandbox.confine(["sh", "-c", command], work) as confined:
        done = subprocess.run(  # the sandbox's own argv, as nobody
            [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "--bounding-set=-all", *confined.argv],
            pass_fds=confined.pass_fds,
            capture_output=True,
            text=True,
            cwd=work,
            timeout=PROCESS_TIMEOUT,
            check=False,
        )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("65534\n"), done.stdout
    assert NO_CAPABILITIES in done.stdout
    assert "Seccomp:\t2" in done.stdout
    assert done.stdout.count("REFUSED") == 3, done.stdout
    assert "WROTE" in done.stdout
    assert (work / "made.txt").stat().st_uid == 65534


def test_n7_programs_never_get_the_store_url() -> None:
    """``ANYY_STORE_URL`` may hold the PostgreSQL password: withheld like the providers' keys."""
    from anyy.profiles.config import Config
    from anyy.runtime.tooling import tool_environment as profile_tool_environment

    environ = {"ANYY_STORE_URL": "postgresql://anyy:n7-password@127.0.0.1/anyy", "PATH": "/usr/bin"}
    kept = profile_tool_environment(Config(), environ)
    assert kept == {"PATH": "/usr/bin"}
    passed = profile_tool_environment(msgspec.convert({"tools": {"pass_env": ["ANYY_STORE_URL"]}}, Config), environ)
    assert "ANYY_STORE_URL" in passed  # the user may hand it through on purpose
