"""Starting a profile's Gateway as a background process, for the clients that do (``anyy gateway start``,
the TUI). The Gateway is run as ``python -m anyy.gateway`` — clients never import it — in its own
session (a terminal's Ctrl+C or hang-up does not end it), its output appended to the profile's
``logs/gateway.out``; it writes its address to a pipe once ready."""

from __future__ import annotations

import os
import select
import socket
import subprocess
import sys
import time
from pathlib import Path

import msgspec

from anyy.client.errors import GatewayStartFailed
from anyy.profiles.disk import full_disk_message
from anyy.profiles.gateway_address import Address, read_address
from anyy.profiles.profile import Profile

OUTPUT_FILE = "logs/gateway.out"
START_TIMEOUT = 30.0


def output_path(profile: Profile) -> Path:
    return profile.path / OUTPUT_FILE


def launch_gateway(
    profile: Profile,
    *,
    host: str | None = None,
    port: int | None = None,
    timeout: float = START_TIMEOUT,
    more: list[str] | None = None,
) -> Address:
    """Start the profile's Gateway and return its address once it is ready; GatewayStartFailed with what
    it said (e.g. that one already runs, and where) when it did not start."""
    profile.require()
    out_path = output_path(profile)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, "-m", "anyy.gateway", "--profile", profile.name]
    if host is not None:
        argv += ["--host", host]
    if port is not None:
        argv += ["--port", str(port)]
    argv += more or []  # e.g. the TLS options (O1)
    read_end, write_end = os.pipe()
    try:
        with open(out_path, "ab") as out:
            offset = out.tell()
            process = subprocess.Popen(  # noqa: S603 - our own interpreter and module
                [*argv, "--ready-fd", str(write_end)],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=out,
                pass_fds=(write_end,),
                start_new_session=True,
                close_fds=True,
            )
    finally:
        os.close(write_end)
    try:
        line = read_line(read_end, timeout)
    finally:
        os.close(read_end)
    if line.startswith(b"error: "):  # why it did not start, said on the pipe (its output file may be unwritable)
        process.wait()
        raise GatewayStartFailed(f"the Gateway of profile {profile.name} did not start: {line[7:].decode().strip()}")
    if line.endswith(b"\n"):
        return msgspec.json.decode(line, type=Address)
    raise _why_not_started(profile, process, out_path, offset, timeout)


def _why_not_started(
    profile: Profile, process: subprocess.Popen[bytes], out_path: Path, offset: int, timeout: float
) -> GatewayStartFailed:
    """What to tell when the Gateway said nothing on its ready pipe: still starting, or what it printed."""
    try:
        code = process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        return GatewayStartFailed(
            f"the Gateway of profile {profile.name} (pid {process.pid}) was not ready after {timeout:g} s; "
            f"it may still be starting: see {out_path}, `anyy gateway status --profile {profile.name}`"
        )
    said = _new_output(out_path, offset)
    said = said.removeprefix("error: ") if said.count("\n") == 0 else said
    if not said and (full := full_disk_message(profile.name, profile.path)) is not None:
        said = full  # nothing could be written: exit status 120, and no output, is all there is to see
    return GatewayStartFailed(
        f"the Gateway of profile {profile.name} did not start (exit status {code}): {said or 'no output'}"
        + ("" if said else f"; see {out_path}")
    )


def read_line(fd: int, timeout: float) -> bytes:
    """Bytes from ``fd`` up to a newline or end of file, or what came before ``timeout`` seconds."""
    poller = select.poll()
    poller.register(fd, select.POLLIN | select.POLLHUP)
    deadline = time.monotonic() + timeout
    data = b""
    while not data.endswith(b"\n"):
        left = deadline - time.monotonic()
        if left <= 0 or not poller.poll(left * 1000):
            break
        chunk = os.read(fd, 4096)
        if not chunk:
            break
        data += chunk
    return data


def answering(address: Address) -> bool:
    """Whether something listens at the address the Gateway published (its process may be gone)."""
    try:
        os.kill(address.pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    try:
        with socket.create_connection((address.host, address.port), timeout=1.0):
            return True
    except OSError:
        return False


def _new_output(path: Path, offset: int) -> str:
    try:
        with open(path, "rb") as handle:
            handle.seek(offset)
            return handle.read().decode(errors="replace").strip()
    except OSError:
        return ""


def ensure_gateway(profile: Profile, *, timeout: float = START_TIMEOUT) -> tuple[Address, str | None]:
    """The running Gateway's address, starting one first if none answers (the interactive clients, the
    TUI and ``anyy dashboard``, do this; ``anyy chat`` fails fast instead). The second value, when a
    Gateway was started, says so for the user."""
    profile.require()
    found = read_address(profile)
    if found is not None and answering(found):
        return found, None
    address = launch_gateway(profile, timeout=timeout)
    log = output_path(profile)
    return address, f"Started the Gateway of profile {profile.name} at {address.url} (pid {address.pid}); log: {log}"
