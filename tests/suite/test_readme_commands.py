"""Every shell command of the README runs as written, in order, on a fresh ``ANYY_HOME`` (SPEC U4: a new
user copies them). Each ```sh block is one bash script (``set -euo pipefail``), the blocks one after the
other in one working folder and one home, so what a block creates the next one reads.

What is not run is listed here, each with its reason: commands that need the network, a key, a
PostgreSQL server or a real harness, and the foreground Gateway. The placeholder ``ID`` (a session id the
reader copies from what ``anyy chat`` printed) is replaced by the profile's newest session. A command
that is meant to exit non-zero (the README says so beside it) has its status checked instead.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"
BIN = Path(sys.executable).parent

# Commands (by how they start) left out, and why.
SKIPPED: dict[str, str] = {
    "bash scripts/run": "installs into ./.venv from PyPI (network); the suite runs from that install",
    "bash scripts/test": "runs the whole suite, this test included",
    "export OPENAI_API_KEY=": "a real OpenAI key",
    "anyy chat --provider openai": "reaches api.openai.com with a real key",
    "export ANTHROPIC_API_KEY=": "a real Anthropic key",
    "anyy chat --provider anthropic": "reaches api.anthropic.com with a real key",
    "anyy store copy --to postgresql://anyy@db.example": "a PostgreSQL server at db.example",
    "anyy gateway start                                           # after setting the URL": (
        "part of the PostgreSQL steps, after setting a store URL for db.example"
    ),
    "anyy gateway start                                                  # the profile's own": (
        "the several-Gateways steps: a PostgreSQL server at db.example (tests/distributed/test_status.py runs them)"
    ),
    "anyy gateway status                                                 # every Gateway": (
        "the several-Gateways steps: a PostgreSQL server at db.example (tests/distributed/test_status.py runs them)"
    ),
    "anyy gateway stop --all": (
        "the several-Gateways steps: a PostgreSQL server at db.example (tests/distributed/test_status.py runs them)"
    ),
    "anyy gateway run": (
        "runs in the foreground until Ctrl+C; tests/cli/test_chat_u4.py::test_u4_gateway_run_says_where_it_listens"
    ),
    "export AMEESH_CLAUDE_BIN=/path/to/claude": "a real Claude Code install and login",
    "export AMEESH_CODEX_BIN=/path/to/codex": "a real Codex CLI install and login",
    "export AMEESH_PI_BIN=/path/to/pi": "a real pi install",
    "export AMEESH_DSH_BIN=/path/to/dsh": "a real DeepSeek Harness install",
    'export AMEESH_ACP_AGENT="opencode acp"': "a real ACP agent",
    "ameesh add alice --harness claude --dir ~/src/myrepo": "a repository of your own and Claude Code",
    "ameesh add carol --harness codex --dir ~/src/myrepo": "a repository of your own and Codex",
    "export TELEGRAM_BOT_TOKEN=": "a real bot token from Telegram's @BotFather",
    "anyy channel add phone": (
        "the channel polls api.telegram.org (network); tests/channels/test_channel_cli.py runs these commands "
        "against a loopback Bot API server"
    ),
    "anyy gateway start                             # the channel starts polling": "the Telegram steps (network)",
    "anyy channel pair K7QX2M9P": "a code the bot gave (tests/channels/test_channel_cli.py pairs)",
    "anyy channel list                              # state, senders": "the Telegram steps (network)",
    "anyy sessions rewind ID ENTRY": (
        "ENTRY is an entry the reader picks in the tree (tests/workspaces/test_cli_files.py runs a rewind)"
    ),
}

# Commands that exit non-zero on purpose, with the status the README gives them.
EXPECTED_STATUS: dict[str, int] = {
    'anyy chat "can you ask me my name?"': 3,  # the agent asks back
}

NEWEST_SESSION = (
    "readme_id() { anyy sessions list --json | "
    'python3 -c \'import json, sys; print(json.load(sys.stdin)["items"][0]["id"])\'; }'
)


def shell_blocks(text: str) -> list[list[str]]:
    """The command lines of each ```sh block (comment-only and blank lines left out)."""
    blocks = re.findall(r"^```sh\n(.*?)^```", text, flags=re.S | re.M)
    return [
        [line for line in block.splitlines() if line.strip() and not line.lstrip().startswith("#")] for block in blocks
    ]


def runnable_blocks(text: str) -> list[str]:
    """Each ```sh and ```python block as a bash script, in the README's order (a Python block runs in the
    interpreter the suite runs in, where anyy is installed)."""
    scripts = []
    for language, body in re.findall(r"^```(sh|python)\n(.*?)^```", text, flags=re.S | re.M):
        if language == "sh":
            scripts.append(script(shell_blocks(f"```sh\n{body}```\n")[0]))
        else:
            scripts.append(f"set -euo pipefail\n'{sys.executable}' - <<'README_PY'\n{body}README_PY\n")
    return scripts


def without_comment(line: str) -> str:
    """The command without its trailing ``# comment`` (a ``#`` inside quotes, or inside a word, stays)."""
    quote = ""
    for i, char in enumerate(line):
        if quote:
            if char == quote:
                quote = ""
        elif char in "'\"":
            quote = char
        elif char == "#" and (i == 0 or line[i - 1] in " \t"):
            return line[:i].rstrip()
    return line.rstrip()


def skipped(line: str) -> str | None:
    return next((why for start, why in SKIPPED.items() if line.startswith(start)), None)


def script_line(line: str) -> str:
    command = re.sub(r"(?<![\w$-])ID(?![\w-])", '"$(readme_id)"', line)
    for start, status in EXPECTED_STATUS.items():
        if line.startswith(start):
            return (
                f"set +e; {command}; status=$?; set -e; "
                f'[ "$status" = {status} ] || {{ echo "README: exit $status, not {status}" >&2; exit 1; }}'
            )
    return command


def script(block: list[str]) -> str:
    lines = ["set -euo pipefail", NEWEST_SESSION]
    for line in block:
        why = skipped(line)
        command = without_comment(line)
        lines.append(f": skipped, {why!r}" if why else f'echo "README> "{_quoted(command)} >&2\n{script_line(command)}')
    return "\n".join(lines) + "\n"


def _quoted(line: str) -> str:
    return "'" + line.replace("'", "'\\''") + "'"


def test_u4_the_readme_names_only_skips_it_has() -> None:
    lines = [line for block in shell_blocks(README.read_text()) for line in block]
    for start in [*SKIPPED, *EXPECTED_STATUS]:
        assert any(line.startswith(start) for line in lines), f"no README command starts with {start!r}"


def test_u4_every_readme_command_runs_on_a_fresh_home(tmp_path: Path) -> None:
    home = tmp_path / "anyy-home"  # fresh: not even the folder exists
    work = tmp_path / "work"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANYY_", "AMEESH_"))}
    env.update(ANYY_HOME=str(home), PATH=f"{BIN}{os.pathsep}{env.get('PATH', '')}")
    blocks = runnable_blocks(README.read_text())
    assert len(blocks) >= 5
    assert any("README_PY" in block for block in blocks)  # the Python example runs too
    try:
        for number, block in enumerate(blocks, 1):
            done = subprocess.run(
                ["bash", "-c", block],
                check=False,
                cwd=work,
                env=env,
                capture_output=True,
                text=True,
                timeout=600,
            )
            assert done.returncode == 0, f"README block {number} failed:\n{done.stderr[-4000:]}"
    finally:
        subprocess.run([str(BIN / "anyy"), "gateway", "stop"], env=env, capture_output=True, timeout=60, check=False)
