"""What config.toml says about tools, turned into what the tools take (SPEC N3): their environment (no
secrets) and their policy (private addresses, the sandbox). The machine's sandbox is probed once."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from pathlib import Path

from anyy.profiles.config import STORE_URL_ENV, Config
from anyy.tools.approval_rules import ApprovalRules
from anyy.tools.environment import tool_environment as filtered_environment
from anyy.tools.mcp_servers import McpServerSpec
from anyy.tools.policy import ToolPolicy
from anyy.tools.sandbox import detect_sandbox
from anyy.tools.sandbox_hide import not_default

log = logging.getLogger("anyy.tools")
_said: set[str] = set()


def tool_environment(config: Config, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The Gateway's environment without the providers' keys (every ``api_key_env`` of the profile), the
    store's URL (it may carry a password: N7) and variables whose names say they hold a secret, except
    those in ``[tools] pass_env``."""
    source = os.environ if environ is None else environ
    keys = {config.provider(name).api_key_env for name in config.provider_names()} - {""}
    keys.add(STORE_URL_ENV)
    return filtered_environment(source, withheld=keys, pass_through=config.tools.pass_env)


def tool_policy(config: Config, anyy_home: Path | None = None) -> ToolPolicy:
    """The profile's tool policy, hiding ``anyy_home`` from tools (N7); the first time the sandbox is found
    missing or lacking, the log says so."""
    settings = config.tools.sandbox
    sandbox = detect_sandbox(
        enabled=settings.enabled,
        network=settings.network,
        anyy_home=anyy_home,
        hide=settings.hide,
        show=settings.show,
    )
    warnings = [] if sandbox.active and not sandbox.degraded else [sandbox.note]
    warnings += [
        f"[tools.sandbox] show: {entry!r} is not hidden by default, so it shows nothing (the anyy home is "
        "always hidden)"
        for entry in not_default(settings.show, network=settings.network)
    ]
    for warning in warnings:
        if warning not in _said:
            _said.add(warning)
            log.warning("%s", warning)
    return ToolPolicy(
        allow_private_network=config.tools.web_fetch.allow_private,
        sandbox=sandbox,
        approval=ApprovalRules.from_config(config.tools.approval),
    )


def mcp_specs(config: Config) -> list[McpServerSpec]:
    """The profile's ``[mcp.servers.NAME]`` tables, in their order."""
    return [
        McpServerSpec(
            name=name,
            command=server.command,
            args=tuple(server.args),
            env=tuple(server.env.items()),
            url=server.url,
            headers=tuple(server.headers.items()),
            include=tuple(server.include),
            exclude=tuple(server.exclude),
            timeout=server.timeout,
        )
        for name, server in config.mcp.servers.items()
    ]
