"""The live Gateways tests talk to, shared by every directory of the suite.

:class:`LiveGateway`: a real Gateway in-process. A profile in tmp_path, its SQLite store, the runtime with
a scripted :class:`OfflineProvider`, the Dispatcher over the method table, and (when served) the ASGI app
under uvicorn on 127.0.0.1 port 0. Everything of the Gateway runs on one event loop in a background
thread, as in the real process. Tests stay synchronous: they reach the Gateway over real HTTP and
WebSocket on loopback (:class:`WsClient`, :func:`http_post`), or hand frames to the Dispatcher on the
Gateway's loop (:meth:`LiveGateway.dispatch`). Work is held by the offline model's gates.

:class:`GatewayProcess`: a real Gateway per test, started and stopped with the ``anyy`` console script
(fixture ``start_gateway``), and ``anyy chat`` run as a real process. Work is held by a :class:`Hold` (a
shell call of the offline model blocked on a named pipe).

Nothing sleeps to synchronise: waits are on messages, futures, gates, pipes and process output, with
timeouts.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import http.client
import itertools
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Coroutine, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import msgspec
import pytest
import uvicorn
from websockets.sync.client import ClientConnection, connect

from anyy.channels.service import Channels
from anyy.client.protocol import Reply
from anyy.client.sync import Client
from anyy.client.sync import connect as connect_client
from anyy.domain.model_io import TextDelta
from anyy.gateway.app import create_app
from anyy.gateway.dispatcher import Dispatcher
from anyy.gateway.methods import TABLE
from anyy.gateway.state import Gateway
from anyy.profiles import Profile, create_profile, get_profile
from anyy.profiles.gateway_address import Address, read_address
from anyy.providers.gates import Gate
from anyy.providers.offline import OfflineProvider
from anyy.providers.registry import Loader, ModelRegistry
from anyy.runtime.assembly import build_deps
from anyy.runtime.runtime import Runtime
from anyy.runtime.schedule_admin import scheduling_for
from anyy.runtime.scheduler import WallClock
from commons import jsonrpc
from commons.jsonrpc import RpcError

T = TypeVar("T")
TIMEOUT = 10.0
TOKEN = "test-token-" + "x" * 20


class LiveGateway:
    """A Gateway on its own loop thread. ``serve=False`` skips uvicorn (Dispatcher-only tests)."""

    def __init__(
        self,
        tmp_path: Path,
        *,
        profile_name: str = "default",
        serve: bool = True,
        scripted_only: bool = True,
        wall_clock: WallClock | None = None,
        loaders: Mapping[str, Loader] | None = None,
        port: int = 0,
        token: str = TOKEN,
    ) -> None:
        """``port`` and ``token`` given: the same profile again, as a Gateway restarted on its port (U8)."""
        self.wall_clock = wall_clock  # the scheduler's calendar clock (K1); None: the system's
        self.loaders = loaders  # providers' loaders by kind (a test holds one: G4)
        self.home = tmp_path / "anyy-home"
        self.profile: Profile = create_profile(self.home, profile_name, exist_ok=bool(port))
        (tmp_path / "work").mkdir(exist_ok=True)
        self.workdir = tmp_path / "work"
        # Scripted only: a call with nothing enqueued fails, so no test (and no fuzz input) ever makes the
        # offline model call a real tool by one of its cues.
        self.model = OfflineProvider(scripted_only=scripted_only)
        self.token = token
        self.serve = serve
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name=f"gateway-{profile_name}", daemon=True)
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None
        self._failure: BaseException | None = None
        self._server: uvicorn.Server | None = None
        self.sock: socket.socket | None = None
        self.gateway: Gateway | None = None
        self.dispatcher: Dispatcher | None = None
        self.channel_env: dict[str, str] | None = None  # the channels' environment (L1); None: the process's
        if serve:
            self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            self.sock.bind(("127.0.0.1", port))
            self.sock.listen(128)

    # -- lifecycle -------------------------------------------------------------------------------
    def start(self) -> LiveGateway:
        self._thread.start()
        if not self._ready.wait(TIMEOUT):
            raise RuntimeError("the test Gateway did not start in time")
        if self._failure is not None:
            raise RuntimeError("the test Gateway failed to start") from self._failure
        return self

    def close(self) -> None:
        if self._thread.is_alive() and self._stop is not None:
            self.loop.call_soon_threadsafe(self._stop.set)
            self._thread.join(TIMEOUT)
        if self.sock is not None:
            self.sock.close()

    def __enter__(self) -> LiveGateway:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_until_complete(self._main())
        finally:
            self.loop.close()

    async def _main(self) -> None:
        self._stop = asyncio.Event()
        try:
            deps = build_deps(self.profile, workdir=self.workdir)
            config = self.profile.load_config()
            deps.models = ModelRegistry(
                {n: config.provider(n) for n in config.provider_names()},
                instances={"offline": self.model},
                loaders=self.loaders,
            )
            deps.owner.start()
            runtime = Runtime(deps)
            await runtime.start()
            schedules = scheduling_for(self.profile, runtime, clock=self.wall_clock)
            await schedules.scheduler.start()
            self.gateway = Gateway(
                profile=self.profile, deps=deps, runtime=runtime, token=self.token, schedules=schedules
            )
            self.gateway.channels = Channels(runtime, self.profile.path, environ=self.channel_env)
            await self.gateway.channels.start()
            self.dispatcher = Dispatcher(self.gateway, TABLE)
            serving: asyncio.Task[None] | None = None
            if self.serve:
                assert self.sock is not None
                app = create_app(self.dispatcher, self.token)
                config_ = uvicorn.Config(
                    app, log_config=None, access_log=False, lifespan="off", ws_max_size=16 * 1024 * 1024
                )
                self._server = uvicorn.Server(config_)
                serving = asyncio.create_task(self._server.serve(sockets=[self.sock]))
        except BaseException as exc:
            self._failure = exc
            self._ready.set()
            raise
        self._ready.set()
        await self._stop.wait()
        if serving is not None and self._server is not None:
            self._server.should_exit = True
            await serving
        if self.gateway is not None and self.gateway.channels is not None:
            await self.gateway.channels.aclose()
        await schedules.scheduler.aclose()
        await runtime.aclose()
        await deps.owner.aclose()

    # -- reaching the Gateway --------------------------------------------------------------------
    @property
    def port(self) -> int:
        assert self.sock is not None
        return int(self.sock.getsockname()[1])

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/ws"

    def run(self, coro: Coroutine[Any, Any, T], timeout: float = TIMEOUT) -> T:
        """Run a coroutine on the Gateway's loop and wait for its result."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def dispatch(self, frame: bytes | str) -> Any:
        """One frame through the Dispatcher (no transport, no connection), the reply decoded (or None)."""
        assert self.dispatcher is not None
        reply = self.run(self.dispatcher.handle(frame, None))
        return None if reply is None else json.loads(reply)

    def call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        """A call through the Dispatcher; the result, or the RpcError raised."""
        return jsonrpc.result_of(self.dispatch(jsonrpc.request(method, params, 1)))

    def ws(self, *, token: str | None = None) -> WsClient:
        return WsClient(self.ws_url, self.token if token is None else token)

    def http(self, body: bytes | str, *, token: str | None = None) -> tuple[int, Any]:
        return http_post(self.port, body, self.token if token is None else token)


def http_post(port: int, body: bytes | str, token: str | None) -> tuple[int, Any]:
    """POST one frame to /rpc: the HTTP status and the decoded reply (None when the body is empty)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=TIMEOUT)
    headers = {"Content-Type": "application/json"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    try:
        conn.request("POST", "/rpc", body=body.encode() if isinstance(body, str) else body, headers=headers)
        response = conn.getresponse()
        data = response.read()
        return response.status, (json.loads(data) if data else None)
    finally:
        conn.close()


class WsClient:
    """A tiny JSON-RPC client over one WebSocket: replies are matched by id; ``event`` notifications
    are kept aside for :meth:`event`."""

    def __init__(self, url: str, token: str) -> None:
        headers = {"Authorization": f"Bearer {token}"} if token else None
        self._stack = contextlib.ExitStack()
        self.conn: ClientConnection = self._stack.enter_context(
            connect(url, additional_headers=headers, max_size=None, open_timeout=TIMEOUT)
        )
        self._ids = itertools.count(1)
        self.events: list[dict[str, Any]] = []
        self.replies: dict[Any, dict[str, Any]] = {}
        self.others: list[Any] = []

    def close(self) -> None:
        self._stack.close()

    def __enter__(self) -> WsClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def send_raw(self, frame: bytes | str) -> None:
        self.conn.send(frame if isinstance(frame, str) else frame.decode("utf-8", "surrogateescape"))

    def receive(self, timeout: float = TIMEOUT) -> Any:
        """The next message, decoded; events are also recorded."""
        message = json.loads(self.conn.recv(timeout))
        if isinstance(message, dict) and message.get("method") == "event" and "id" not in message:
            self.events.append(message["params"])
        return message

    def reply_to(self, id: Any, timeout: float = TIMEOUT) -> dict[str, Any]:
        """The reply with this id (events and other replies that arrive first are kept)."""
        while id not in self.replies:
            message = self.receive(timeout)
            if isinstance(message, dict) and "id" in message:
                self.replies[message["id"]] = message
            elif isinstance(message, list):
                self.others.append(message)
        return self.replies.pop(id)

    def request(self, method: str, params: dict[str, Any] | None = None) -> int:
        """Send a call without waiting; its id."""
        id = next(self._ids)
        self.send_raw(jsonrpc.request(method, params, id))
        return id

    def call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        """The result of a call, or the RpcError it returned."""
        return jsonrpc.result_of(self.reply_to(self.request(method, params)))

    def event(self, predicate: Callable[[dict[str, Any]], bool], timeout: float = TIMEOUT) -> dict[str, Any]:
        """The first event (seen already, or arriving) that matches; consumed."""
        while True:
            for i, event in enumerate(self.events):
                if predicate(event):
                    return self.events.pop(i)
            message = self.receive(timeout)
            if isinstance(message, dict) and "id" in message:
                self.replies[message["id"]] = message


def error_code(fn: Callable[[], Any]) -> int:
    """The JSON-RPC error code ``fn`` failed with (fails the test if it succeeded)."""
    try:
        result = fn()
    except RpcError as exc:
        return exc.code
    raise AssertionError(f"expected an error reply, got the result {result!r}")


# -- scenario helpers --------------------------------------------------------------------------------
def is_state(state: str, execution_id: str | None = None) -> Callable[[dict[str, Any]], bool]:
    def match(event: dict[str, Any]) -> bool:
        return (
            event.get("type") == "execution_state"
            and event.get("state") == state
            and (execution_id is None or event.get("execution_id") == execution_id)
        )

    return match


def wait_gate(gate: Gate) -> None:
    """Block until the scripted stream has reached ``gate`` (the model is mid-answer)."""
    if not gate.reached.wait_blocking(TIMEOUT):
        raise AssertionError(f"the model never reached {gate!r}")


def busy_session(live: LiveGateway, client: WsClient, *, text: str = "start", after: str = "done") -> BusySession:
    """A session whose first response is held mid-stream by a gate; subscribed on ``client``."""
    session = client.call("session.create")
    client.call("events.subscribe", {"session_id": session["id"]})
    gate = Gate("held stream")
    live.model.enqueue([gate, TextDelta(text=after)])
    first = client.call("session.send", {"session_id": session["id"], "text": text})
    wait_gate(gate)
    running = client.call("session.get", {"session_id": session["id"]})["running_execution"]
    assert running is not None
    return BusySession(id=session["id"], gate=gate, first=first, execution_id=running)


class BusySession:
    def __init__(self, *, id: str, gate: Gate, first: dict[str, Any], execution_id: str) -> None:
        self.id = id
        self.gate = gate
        self.first = first
        self.execution_id = execution_id


def put_object(live: LiveGateway, data: bytes, name: str = "note.txt") -> dict[str, Any]:
    """Store an object in the profile (as an upload would) and return it as an attachment."""
    assert live.gateway is not None
    gateway = live.gateway
    ref = live.run(gateway.store(lambda s: s.put_object(data, media_type="text/plain")))
    return {"object": ref.hash, "name": name, "media_type": "text/plain", "size": len(data)}


# -- a Gateway process, started with the console script ---------------------------------------------
BIN = Path(sys.executable).parent
ANYY = str(BIN / "anyy")
PROCESS_TIMEOUT = 60.0

# A provider that fails at once: nothing listens on port 1 of the loopback, and automatic retries are off.
BROKEN_PROVIDER = """
[providers.broken]
kind = "openai"
base_url = "http://127.0.0.1:1/v1"
"""


def env_for(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("ANYY_PROFILE", "ANYY_HOME")}
    env["ANYY_HOME"] = str(home)
    return env


def run(home: Path, *args: str, timeout: float = PROCESS_TIMEOUT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [ANYY, *args], capture_output=True, text=True, env=env_for(home), timeout=timeout, check=False
    )


def start(home: Path, *args: str) -> subprocess.Popen[str]:
    """``anyy ARGS`` as a process, with SIGINT at its default whatever the test runner's shell did (a
    shell that ignores SIGINT for its background jobs passes that on, and Python then never raises
    KeyboardInterrupt: Ctrl+C tests would hang or pass for the wrong reason)."""
    return subprocess.Popen(
        [ANYY, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env_for(home),
        preexec_fn=_default_sigint,  # noqa: PLW1509 - only resets one signal, before exec
    )


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def finish(process: subprocess.Popen[str], timeout: float = PROCESS_TIMEOUT) -> tuple[int, str, str]:
    out, err = process.communicate(timeout=timeout)
    return process.returncode, out, err


def chat_json(home: Path, *args: str) -> tuple[int, dict[str, Any], str]:
    done = run(home, "chat", "--json", *args)
    assert done.stdout, f"no JSON on stdout (exit {done.returncode}): {done.stderr}"
    return done.returncode, json.loads(done.stdout), done.stderr


@dataclass
class GatewayProcess:
    home: Path
    profile: str

    @property
    def address(self) -> Address:
        found = read_address(get_profile(self.home, self.profile))
        assert found is not None, "the Gateway's gateway.json is gone"
        return found

    @contextlib.contextmanager
    def client(self) -> Iterator[Client]:
        with connect_client(self.address) as client:
            yield client


def wait_event(
    client: Client, match: Callable[[dict[str, Any]], bool], timeout: float = PROCESS_TIMEOUT
) -> dict[str, Any]:
    """The first event that matches, read within ``timeout`` seconds (replies in between are dropped)."""
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise AssertionError("the expected event did not come")
        message = client.receive(left)
        if isinstance(message, Reply):
            continue
        params: dict[str, Any] = msgspec.to_builtins(message)  # with its "type"
        if match(params):
            return params


def wait_queued(client: Client, session_id: str, text: str, timeout: float = PROCESS_TIMEOUT) -> dict[str, Any]:
    """The pending submission with this text, once the session's queue holds it (on queue_changed)."""
    deadline = time.monotonic() + timeout
    while True:
        for item in client.call("session.queue.list", {"session_id": session_id}):
            if item["text"] == text:
                return item  # type: ignore[no-any-return]
        wait_event(
            client,
            lambda e: e["type"] == "queue_changed" and e["session_id"] == session_id,
            deadline - time.monotonic(),
        )


def _hold_folder() -> Path:
    """Where holds' pipes are made: outside /tmp, which the tools' sandbox replaces with a private, empty
    one (a shell call there could not open a pipe in the test's tmp_path); zero-byte pipes, one folder."""
    base = Path("/var/tmp")
    if not (base.is_dir() and os.access(base, os.W_OK)):
        base = Path.home() / ".cache"
    folder = base / "anyy-test-holds"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


class Hold:
    """Work held in a Gateway *process*, where no in-process gate reaches: ``command`` is a cue for the
    offline model (``run: read line < FIFO``) whose shell call blocks on a named pipe until
    :meth:`release`. The session stays busy for as long as the test wants, whatever the machine's load."""

    def __init__(self, path: Path) -> None:
        self.path = path
        os.mkfifo(path)
        self._fd: int | None = None
        self._released = False

    @classmethod
    def until_stopped(cls) -> Hold:
        """A hold nobody releases, for a turn the test ends with a stop."""
        return cls(_hold_folder() / f"hold-{uuid.uuid4().hex[:8]}")

    @property
    def command(self) -> str:
        return f"run: read line < {self.path}"

    def wait_running(self, timeout: float = 60.0) -> None:
        """Return once the held shell call runs: it has opened the pipe (a tool call is recorded before its
        program starts, D3). The pipe is then held open for writing, so the call keeps waiting for a line
        until :meth:`release`; TimeoutError after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while self._fd is None:
            try:
                self._fd = os.open(self.path, os.O_WRONLY | os.O_NONBLOCK)  # ENXIO while nobody reads it
            except OSError as exc:
                if exc.errno != errno.ENXIO:
                    raise
                if time.monotonic() >= deadline:
                    raise TimeoutError(f"the held shell call did not start within {timeout:g} s") from None
                time.sleep(0.01)  # a look at the pipe, not a wait for an amount of time: bounded by the timeout

    def release(self) -> None:
        """Let the held shell call finish. The pipe is opened read-write so the write never blocks,
        whether or not the shell has opened it yet; the line waits in the pipe for it."""
        if self._fd is None:
            self._fd = os.open(self.path, os.O_RDWR | os.O_NONBLOCK)
        if not self._released:
            self._released = True
            with contextlib.suppress(BrokenPipeError):  # the shell that read it is gone (a killed Gateway)
                os.write(self._fd, b"go\n")

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)


MakeHold = Callable[[], Hold]


@pytest.fixture
def hold() -> Iterator[MakeHold]:
    """``hold()``: a new :class:`Hold`; every hold is released and closed at teardown."""
    made: list[Hold] = []

    def make() -> Hold:
        made.append(Hold(_hold_folder() / f"hold-{uuid.uuid4().hex[:12]}"))
        return made[-1]

    yield make
    for each in made:
        each.release()
    for each in made:
        each.close()
        each.path.unlink(missing_ok=True)


def make_busy(client: Client, session_id: str, held: Hold) -> dict[str, Any]:
    """Start a turn that holds the session in a shell call until ``held`` is released; return its
    tool_started event (subscribed)."""
    client.call("session.send", {"session_id": session_id, "text": held.command})
    return wait_event(client, lambda e: e["type"] == "tool_started" and e["session_id"] == session_id)


StartGateway = Callable[..., GatewayProcess]


@pytest.fixture
def start_gateway(home: Path) -> Iterator[StartGateway]:
    """Create a profile and start its Gateway with ``anyy gateway start``; stopped in teardown."""
    started: list[GatewayProcess] = []

    def begin(
        profile: str = "default",
        config_extra: str = "",
        retries: bool = True,
        max_retries: int | None = None,
        start_args: tuple[str, ...] = (),
    ) -> GatewayProcess:
        created = run(home, "profile", "create", profile)
        assert created.returncode == 0, created.stderr
        config = home / "profiles" / profile / "config.toml"
        text = config.read_text()
        if not retries:
            text = text.replace("enabled = true", "enabled = false", 1)
        if max_retries is not None:
            text = text.replace("max_retries = 3", f"max_retries = {max_retries}", 1)
        config.write_text(text + config_extra)
        done = run(home, "gateway", "start", "--profile", profile, *start_args)
        assert done.returncode == 0, done.stderr
        live = GatewayProcess(home=home, profile=profile)
        started.append(live)
        return live

    yield begin
    for live in started:
        run(home, "gateway", "stop", "--profile", live.profile)
