"""``python -m anyy.gateway --profile NAME [--host H] [--port P] [--ready-fd FD] [--store URL] [--announce]``:
run a Gateway in the foreground (``anyy gateway run`` and ``anyy gateway start`` use this)."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys

from anyy.domain.errors import AnyyError
from anyy.profiles.gateway_address import Address
from anyy.profiles.home import anyy_home, selected_profile_name
from anyy.profiles.profile import get_profile


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
    args = parser.parse_args(argv)
    if args.store:
        os.environ["ANYY_STORE_URL"] = args.store
    from anyy.gateway.server import serve

    try:
        profile = get_profile(anyy_home(), selected_profile_name(args.profile))
        on_ready = _announce if args.announce else None
        asyncio.run(serve(profile, host=args.host, port=args.port, ready_fd=args.ready_fd, on_ready=on_ready))
    except AnyyError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
