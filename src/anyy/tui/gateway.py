"""Finding the profile's Gateway, and starting it when none runs (the TUI does not fail fast as
``anyy chat`` does: it starts ``python -m anyy.gateway`` the way ``anyy gateway start`` does)."""

from __future__ import annotations

import os
import select
import socket
import subprocess
import sys
import time

import msgspec

from anyy.domain.errors import AnyyError
from anyy.profiles.gateway_address import Address, read_address
from anyy.profiles.profile import Profile

OUTPUT_FILE = "logs/gateway.out"
START_TIMEOUT = 30.0


class GatewayStartFailed(AnyyError):
    pass


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


def ensure_gateway(profile: Profile, *, timeout: float = START_TIMEOUT) -> tuple[Address, str | None]:
    """The running Gateway's address, starting one first if needed; the second value says so."""
    profile.require()
    found = read_address(profile)
    if found is not None and answering(found):
        return found, None
    address = start_gateway(profile, timeout=timeout)
    log = profile.path / OUTPUT_FILE
    return address, f"Started the Gateway of profile {profile.name} at {address.url} (pid {address.pid}); log: {log}"


def start_gateway(profile: Profile, *, timeout: float = START_TIMEOUT) -> Address:
    out_path = profile.path / OUTPUT_FILE
    out_path.parent.mkdir(parents=True, exist_ok=True)
    read_end, write_end = os.pipe()
    argv = [sys.executable, "-m", "anyy.gateway", "--profile", profile.name, "--ready-fd", str(write_end)]
    try:
        with open(out_path, "ab") as out:
            process = subprocess.Popen(  # noqa: S603 - our own interpreter and module
                argv,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=out,
                pass_fds=(write_end,),
                start_new_session=True,  # outlives the TUI, as `anyy gateway start` does
                close_fds=True,
            )
    finally:
        os.close(write_end)
    try:
        line = _read_line(read_end, timeout)
    finally:
        os.close(read_end)
    if not line.endswith(b"\n"):
        code = process.poll()
        state = f"exit status {code}" if code is not None else f"not ready after {timeout:g} s"
        raise GatewayStartFailed(f"the Gateway of profile {profile.name} did not start ({state}); see {out_path}")
    return msgspec.json.decode(line, type=Address)


def _read_line(fd: int, timeout: float) -> bytes:
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
