"""What the Gateway benchmarks share: a real Gateway process on a fresh profile (the offline model), and
one JSON-RPC call over a WebSocket."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class LiveGateway:
    url: str  # ws://…/ws?token=…
    pid: int


@contextlib.contextmanager
def offline_gateway(prefix: str) -> Iterator[LiveGateway]:
    """A Gateway on profile ``bench`` of a temporary home, ready to serve; terminated on the way out."""
    with tempfile.TemporaryDirectory(prefix=prefix) as home:
        env = {**os.environ, "ANYY_HOME": home}
        anyy = Path(sys.executable).with_name("anyy")
        subprocess.run([str(anyy), "profile", "create", "bench"], env=env, check=True, capture_output=True)
        read_fd, write_fd = os.pipe()
        gateway = subprocess.Popen(
            [sys.executable, "-m", "anyy.gateway", "--profile", "bench", "--ready-fd", str(write_fd)],
            env=env,
            pass_fds=(write_fd,),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(write_fd)
        try:
            with os.fdopen(read_fd) as ready:
                address = json.loads(ready.readline())
            yield LiveGateway(f"ws://{address['host']}:{address['port']}/ws?token={address['token']}", gateway.pid)
        finally:
            gateway.terminate()
            gateway.wait(timeout=30)


async def rpc(ws: Any, method: str, params: dict[str, Any], ident: int) -> Any:
    """Call ``method`` and return its result, skipping the events that arrive meanwhile."""
    await ws.send(json.dumps({"jsonrpc": "2.0", "method": method, "params": params, "id": ident}))
    while True:
        message = json.loads(await ws.recv())
        if message.get("id") == ident:
            if "error" in message:
                raise RuntimeError(message["error"])
            return message["result"]
