"""``python -m anyy.gateway --profile NAME [--host H] [--port P] [--ready-fd FD] [--store URL] [--announce]``:
run a Gateway in the foreground (``anyy gateway run`` and ``anyy gateway start`` use this)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys

from anyy.domain.errors import AnyyError
from anyy.profiles.disk import full_disk_message
from anyy.profiles.gateway_address import Address
from anyy.profiles.home import anyy_home, selected_profile_name
from anyy.profiles.profile import get_profile
from anyy.profiles.tls import tls_files


def _announce(address: Address) -> None:
    print(
        f"Gateway of profile {address.profile} listening at {address.url} (pid {address.pid}); Ctrl+C stops it",
        flush=True,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m anyy.gateway", description=__doc__)
    parser.add_argument("--profile", default=None)
    parser.add_argument("--host", default="127.0.0.1", help="loopback unless you mean it")
    parser.add_argument("--port", type=int, default=0, help="0: any free port")
    parser.add_argument("--ready-fd", type=int, default=None, help="write the address here once ready")
    parser.add_argument("--store", default=None, help="a PostgreSQL URL shared with the service's other Gateways")
    parser.add_argument("--announce", action="store_true", help="say on stdout where it listens once ready")
    parser.add_argument("--tls", action="store_true", help="TLS with a certificate of the profile's own CA")
    parser.add_argument("--tls-cert", default=None, help="TLS with your certificate (PEM, with its chain)")
    parser.add_argument("--tls-key", default=None, help="the key of --tls-cert (PEM)")
    parser.add_argument("--tls-name", action="append", default=[], help="one more name the CA's certificate carries")
    args = parser.parse_args(argv)
    if args.store:
        os.environ["ANYY_STORE_URL"] = args.store
    from anyy.gateway.server import serve

    profile = None
    # Our own copy of the ready pipe, to say why a start failed: serve() closes the one it was given once
    # ready, and that number may then be reused by any file.
    report_fd = os.dup(args.ready_fd) if args.ready_fd is not None else None
    try:
        profile = get_profile(anyy_home(), selected_profile_name(args.profile))
        on_ready = _announce if args.announce else None
        tls = tls_files(profile, args.host, args.tls, args.tls_cert, args.tls_key, tuple(args.tls_name))
        asyncio.run(serve(profile, host=args.host, port=args.port, ready_fd=args.ready_fd, on_ready=on_ready, tls=tls))
    except AnyyError as exc:
        _report(f"error: {exc}", report_fd)
        return 1
    except Exception:
        full = full_disk_message(profile.name, profile.path) if profile is not None else None
        if full is None:
            raise
        _report(f"error: {full}", report_fd)  # not "disk I/O error" from wherever it first wrote
        return 1
    return 0


def _report(message: str, ready_fd: int | None) -> None:
    """Say why the Gateway did not start: on stderr, and on the ready pipe, which needs no disk (on a full
    one, stderr is a file that cannot be written, and the client that started it would hear nothing)."""
    with contextlib.suppress(OSError):
        print(message, file=sys.stderr)
    if ready_fd is not None:
        with contextlib.suppress(OSError):
            os.write(ready_fd, message.replace("\n", " ").encode() + b"\n")


if __name__ == "__main__":
    sys.exit(main())
