"""A real Gateway in a child process, for tests: started with ``--ready-fd`` (its address arrives on a
pipe once it serves), called over HTTP POST /rpc with its token, killed with SIGKILL, its death seen on
a pidfd. Nothing here sleeps to wait for something: every wait is on a file descriptor, with a deadline.
"""

from __future__ import annotations

import http.client
import json
import os
import resource
import select
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
READY_TIMEOUT = 30.0
DEATH_TIMEOUT = 30.0


class RpcFailure(Exception):
    """The Gateway answered with a JSON-RPC error."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


class GatewayProcess:
    def __init__(self, home: Path, profile: str, *, cwd: Path, log: Path, fd_limit: int | None = None) -> None:
        self.home = home
        self.fd_limit = fd_limit  # RLIMIT_NOFILE (soft and hard) of the child, as `ulimit -n` would set
        self.profile = profile
        self.cwd = cwd
        self.log = log
        self.proc: subprocess.Popen[bytes] | None = None
        self.pidfd: int | None = None
        self.host = ""
        self.port = 0
        self.token = ""
        self.pid = 0

    def start(self) -> None:
        read_end, write_end = os.pipe()
        env = {
            **os.environ,
            "ANYY_HOME": str(self.home),
            "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT / "src"), os.environ.get("PYTHONPATH")])),
        }
        try:
            with open(self.log, "ab") as stderr:
                self.proc = subprocess.Popen(
                    [sys.executable, "-m", "anyy.gateway", "--profile", self.profile, "--ready-fd", str(write_end)],
                    pass_fds=(write_end,),
                    cwd=self.cwd,
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=stderr,
                    preexec_fn=self._limits if self.fd_limit else None,  # noqa: PLW1509 - only setrlimit
                )
        finally:
            os.close(write_end)
        self.pid = self.proc.pid
        self.pidfd = os.pidfd_open(self.proc.pid)
        try:
            line = _read_line(read_end, time.monotonic() + READY_TIMEOUT)
        finally:
            os.close(read_end)
        if not line:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(f"the Gateway did not become ready: {self.log.read_text(errors='replace')[-2000:]}")
        address = json.loads(line)
        self.host, self.port, self.token = address["host"], address["port"], address["token"]
        assert address["pid"] == self.proc.pid

    def _limits(self) -> None:
        assert self.fd_limit is not None
        resource.setrlimit(resource.RLIMIT_NOFILE, (self.fd_limit, self.fd_limit))

    def kill(self) -> None:
        """SIGKILL, then wait on the pidfd until the process is gone (and reap it)."""
        assert self.proc is not None
        assert self.pidfd is not None
        os.kill(self.proc.pid, signal.SIGKILL)
        ready, _, _ = select.select([self.pidfd], [], [], DEATH_TIMEOUT)
        assert ready, "the Gateway survived SIGKILL"
        self.proc.wait()
        os.close(self.pidfd)
        self.pidfd = None

    def stop(self) -> None:
        """SIGTERM (a clean stop), waiting for the exit."""
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(DEATH_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self.pidfd is not None:
            os.close(self.pidfd)
            self.pidfd = None

    def client(self, timeout: float = 30.0) -> RpcClient:
        return RpcClient(self.host, self.port, self.token, timeout=timeout)


class RpcClient:
    """JSON-RPC over HTTP POST /rpc, one loopback connection per call.

    Why not keep-alive: the Gateway's listening socket is made without ``IPPROTO_TCP``, so asyncio
    does not set TCP_NODELAY on the connections it accepts, and every reply after the first on a
    connection waits ~40 ms (Nagle's algorithm against the client's delayed ACK). A fresh connection
    answers in about a millisecond.
    """

    def __init__(self, host: str, port: int, token: str, *, timeout: float = 30.0) -> None:
        self.host = host
        self.port = port
        self.timeout = timeout
        self.token = token
        self.next_id = 0

    def call(self, method: str, **params: Any) -> Any:
        self.next_id += 1
        body = json.dumps({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}).encode()
        headers = {"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"}
        conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
        try:
            conn.request("POST", "/rpc", body=body, headers=headers)
            reply = json.loads(conn.getresponse().read())
        finally:
            conn.close()
        if "error" in reply and reply["error"] is not None:
            raise RpcFailure(reply["error"]["code"], reply["error"]["message"])
        return reply.get("result")

    def close(self) -> None:
        return None


def _read_line(fd: int, deadline: float) -> bytes:
    data = b""
    while not data.endswith(b"\n"):
        left = deadline - time.monotonic()
        if left <= 0:
            return b""
        ready, _, _ = select.select([fd], [], [], left)
        if not ready:
            return b""
        chunk = os.read(fd, 4096)
        if not chunk:  # the Gateway exited before it was ready
            return b""
        data += chunk
    return data
