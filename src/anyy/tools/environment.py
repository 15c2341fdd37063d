"""The environment of programs tools run (shell, Codemode, stdio MCP servers): never the Gateway's secrets.

A variable is withheld when it is one of the providers' ``api_key_env`` or when its name says it holds a
credential (``*_KEY``, ``*_TOKEN``, ``*SECRET*``, ``*PASSWORD*``, ``*CREDENTIAL*``, ``*_API_KEY``...).
Names listed in ``[tools] pass_env`` are handed through anyway: the user chose to.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping

SECRET_NAME = re.compile(
    r"(^|_)(API_?KEY|KEY|TOKEN|PAT)($|_)|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH|COOKIE",
    re.IGNORECASE,
)
# Provider variables that are secrets whatever their name (besides each profile's api_key_env).
PROVIDER_VARIABLES = frozenset(
    {
        "OPENAI_API_KEY",
        "OPENAI_ORG_ID",
        "OPENAI_PROJECT_ID",
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_AUTH_TOKEN",
        "OPENROUTER_API_KEY",
        "GEMINI_API_KEY",
        "GOOGLE_API_KEY",
        "GOOGLE_APPLICATION_CREDENTIALS",
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AZURE_OPENAI_API_KEY",
        "DEEPSEEK_API_KEY",
        "MISTRAL_API_KEY",
        "GROQ_API_KEY",
        "XAI_API_KEY",
        "HF_TOKEN",
        "GITHUB_TOKEN",
        "GH_TOKEN",
    }
)
# The few variables a stdio MCP server gets from the Gateway (plus its own ``env`` table).
MCP_BASE_VARIABLES = ("PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "TMPDIR", "TZ")


def is_secret_name(name: str) -> bool:
    return name.upper() in PROVIDER_VARIABLES or bool(SECRET_NAME.search(name))


def tool_environment(
    environ: Mapping[str, str], *, withheld: Collection[str] = (), pass_through: Collection[str] = ()
) -> dict[str, str]:
    """``environ`` without secrets: ``withheld`` names (the providers' keys) and secret-looking names,
    except those in ``pass_through``."""
    allowed = set(pass_through)
    return {
        name: value
        for name, value in environ.items()
        if name in allowed or (name not in withheld and not is_secret_name(name))
    }


def mcp_environment(environ: Mapping[str, str], own: Mapping[str, str]) -> dict[str, str]:
    """A stdio MCP server's environment: a short allow-list of the Gateway's variables, plus its ``env``."""
    base = {name: environ[name] for name in MCP_BASE_VARIABLES if name in environ}
    return {**base, **own}
