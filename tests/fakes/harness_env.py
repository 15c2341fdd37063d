"""The environment that points a real harness CLI at the fake model server, isolated in a home of its own:
Claude Code (Anthropic Messages), Codex CLI (OpenAI Responses, through a custom provider in CODEX_HOME)
and pi (Chat Completions, through a custom provider in its agent directory). Used by the end-to-end tests
of ameesh and by its benchmark. The settings are those HARNESSES.md describes.
"""

from __future__ import annotations

import functools
import json
import subprocess
from pathlib import Path

from tests.fakes.model_server import FakeModelServer

ROOT = Path(__file__).resolve().parents[2]
HARNESSES = ("claude", "codex", "pi")
MODELS = {"claude": "claude-fake-model", "codex": "fake-model", "pi": "fake/fake-model"}
BIN_VARS = {"claude": "AMEESH_CLAUDE_BIN", "codex": "AMEESH_CODEX_BIN", "pi": "AMEESH_PI_BIN"}


@functools.cache
def harness_bin() -> Path | None:
    """Where the pinned CLIs are, from scripts/setup-harnesses (idempotent: ~1 s when they are installed)."""
    done = subprocess.run(
        ["bash", str(ROOT / "scripts" / "setup-harnesses")], capture_output=True, text=True, check=False
    )
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        return None
    directory = Path(lines[-1]) / "node_modules" / ".bin"
    return directory if all((directory / name).exists() for name in HARNESSES) else None


def harness_env(name: str, server: FakeModelServer, home: Path, bin_dir: Path) -> dict[str, str]:
    """Variables that make harness ``name`` (and ameesh's adapter for it) use ``server``, with ``home`` as
    the user's home; writes the harness's configuration files under ``home``."""
    env = {"HOME": str(home), BIN_VARS[name]: str(bin_dir / name)}
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
    else:
        raise ValueError(f"no real harness named {name!r}")
    return env
