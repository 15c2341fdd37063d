"""The environment that points a real harness CLI at the fake model server, isolated in a home of its own:
Claude Code (Anthropic Messages), Codex CLI (OpenAI Responses, through a custom provider in CODEX_HOME),
pi (Chat Completions, through a custom provider in its agent directory), DeepSeek Harness (Chat
Completions, its default route pointed at the server by DEEPSEEK_BASE_URL) and the ACP agent opencode
(Chat Completions, through a custom provider in its configuration file). Used by the end-to-end tests
of ameesh and by its benchmark. The settings are those docs/harnesses.md describes.
"""

from __future__ import annotations

import functools
import json
import subprocess
from pathlib import Path

from tests.fakes.model_server import FakeModelServer

ROOT = Path(__file__).resolve().parents[2]
HARNESSES = ("claude", "codex", "pi", "dsh")
CLIS = ("claude", "codex", "pi")  # installed together; dsh and the ACP agent each in a directory of its own
MODELS = {
    "claude": "claude-fake-model",
    "codex": "fake-model",
    "pi": "fake/fake-model",
    "dsh": "fake-model",
    "acp": "fake/fake-model",
}
BIN_VARS = {"claude": "AMEESH_CLAUDE_BIN", "codex": "AMEESH_CODEX_BIN", "pi": "AMEESH_PI_BIN", "dsh": "AMEESH_DSH_BIN"}
SETUP_MODES = {"dsh": ("dsh", "dsh"), "acp": ("acp", "opencode")}  # name → (setup-harnesses mode, command)


@functools.cache
def harness_bin(name: str = "claude") -> Path | None:
    """Where the pinned CLIs are (for ``name``: dsh and the ACP agent have directories of their own), from
    scripts/setup-harnesses (idempotent: ~1 s when they are installed)."""
    mode, command = SETUP_MODES.get(name, ("all", ""))
    done = subprocess.run(
        ["bash", str(ROOT / "scripts" / "setup-harnesses"), mode], capture_output=True, text=True, check=False
    )
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        return None
    directory = Path(lines[-1]) / "node_modules" / ".bin"
    needed = (command,) if command else CLIS
    return directory if all((directory / each).exists() for each in needed) else None


def opencode_config(server: FakeModelServer) -> dict[str, object]:
    """opencode's configuration: one OpenAI-compatible provider on the fake server (its bundled
    @ai-sdk/openai-compatible package: nothing is fetched), no title request, no updates or sharing."""
    provider, model = MODELS["acp"].split("/")
    return {
        "model": MODELS["acp"],
        "autoupdate": False,
        "share": "disabled",
        "agent": {"title": {"disable": True}},
        "provider": {
            provider: {
                "npm": "@ai-sdk/openai-compatible",
                "name": "Fake",
                "options": {"baseURL": server.openai_url, "apiKey": "sk-test-key"},
                "models": {model: {"name": "Fake model"}},
            }
        },
    }


def harness_env(name: str, server: FakeModelServer, home: Path, bin_dir: Path) -> dict[str, str]:
    """Variables that make harness ``name`` (and ameesh's adapter for it) use ``server``, with ``home`` as
    the user's home; writes the harness's configuration files under ``home``."""
    env = {"HOME": str(home)}
    if name in BIN_VARS:
        env[BIN_VARS[name]] = str(bin_dir / name)
    if name == "claude":
        env |= {
            "ANTHROPIC_BASE_URL": server.anthropic_url,
            "ANTHROPIC_API_KEY": "sk-ant-test-key",
            "CLAUDE_CONFIG_DIR": str(home / ".claude"),
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "CLAUDE_CODE_MAX_RETRIES": "1",
        }
    elif name == "codex":
        codex_home = home / ".codex"
        codex_home.mkdir(parents=True, exist_ok=True)
        (codex_home / "config.toml").write_text(
            'model_provider = "fake"\n'
            f'model = "{MODELS["codex"]}"\n'
            "[model_providers.fake]\n"
            'name = "fake"\n'
            f'base_url = "{server.openai_url}"\n'
            'env_key = "FAKE_MODEL_API_KEY"\n'
            'wire_api = "responses"\n',
            encoding="utf-8",
        )
        env |= {"CODEX_HOME": str(codex_home), "FAKE_MODEL_API_KEY": "sk-test-key"}
    elif name == "pi":
        agent_dir = home / ".pi" / "agent"
        agent_dir.mkdir(parents=True, exist_ok=True)
        provider = {"baseUrl": server.openai_url, "api": "openai-completions", "apiKey": "sk-test-key"}
        models = {"providers": {"fake": {**provider, "models": [{"id": MODELS["pi"].split("/")[1]}]}}}
        (agent_dir / "models.json").write_text(json.dumps(models), encoding="utf-8")
        env["PI_CODING_AGENT_DIR"] = str(agent_dir)
    elif name == "dsh":
        env |= {
            "DSH_HOME": str(home / ".dsh"),
            "DEEPSEEK_BASE_URL": server.openai_url,
            "DEEPSEEK_API_KEY": "sk-test-key",
            "DSH_TELEMETRY_DISABLED": "1",
        }
    elif name == "acp":
        config = home / ".config" / "opencode"
        config.mkdir(parents=True, exist_ok=True)
        (config / "opencode.json").write_text(json.dumps(opencode_config(server)), encoding="utf-8")
        env |= {
            "AMEESH_ACP_AGENT": f"{bin_dir / 'opencode'} acp",
            "XDG_CONFIG_HOME": str(home / ".config"),
            "XDG_DATA_HOME": str(home / ".local" / "share"),
            "XDG_CACHE_HOME": str(home / ".cache"),
            "XDG_STATE_HOME": str(home / ".local" / "state"),
            "OPENCODE_DISABLE_MODELS_FETCH": "1",
            "OPENCODE_DISABLE_AUTOUPDATE": "1",
            "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
            "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
            "OPENCODE_DISABLE_SHARE": "1",
        }
    else:
        raise ValueError(f"no real harness named {name!r}")
    return env
