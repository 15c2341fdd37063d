"""The TLS options of ``anyy gateway start`` and ``run`` (O1), passed on to the Gateway process: paths and
names only, never a secret, so they may sit in its command line."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click


def tls_options(command: Callable[..., Any]) -> Callable[..., Any]:
    options = [
        click.option(
            "--tls",
            "own_ca",
            is_flag=True,
            help="Speak TLS with a certificate of this profile's own authority (needed beyond loopback).",
        ),
        click.option("--tls-cert", default=None, metavar="FILE", help="Speak TLS with your certificate (PEM, chain)."),
        click.option("--tls-key", default=None, metavar="FILE", help="The key of --tls-cert (PEM)."),
        click.option(
            "--tls-name",
            "tls_names",
            multiple=True,
            metavar="NAME",
            help="One more name or address the profile's certificate carries (repeatable).",
        ),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def tls_argv(host: str | None, own_ca: bool, cert: str | None, key: str | None, names: tuple[str, ...]) -> list[str]:
    """The Gateway's arguments for these options; refused at once when a bind beyond loopback has no TLS."""
    from anyy.profiles.tls import is_address, require_tls

    wants_tls = own_ca or cert is not None or key is not None or bool(names)
    if host is not None and is_address(host) and not wants_tls:
        require_tls(host, None)  # a name is checked by the Gateway once bound (a wrong one is said as such)
    argv = ["--tls"] if own_ca else []
    if cert is not None:
        argv += ["--tls-cert", cert]
    if key is not None:
        argv += ["--tls-key", key]
    for name in names:
        argv += ["--tls-name", name]
    return argv
