"""How the CLI reports what went wrong (SPEC A1, X1): ``error: <message>`` on stderr, exit 1, no traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from anyy.domain.sessions import NewSession
from tests.cli.conftest import MakeProfile, OpenStore, Run

READ_COMMANDS = [
    ("sessions", "list"),
    ("sessions", "show", "ses_0000000000aa"),
    ("sessions", "tree", "ses_0000000000aa"),
    ("sessions", "search", "tea"),
    ("sessions", "export", "ses_0000000000aa"),
    ("profile", "show"),
    ("profile", "path"),
]


@pytest.mark.parametrize("command", READ_COMMANDS, ids=" ".join)
def test_a1_reading_a_missing_profile_does_not_create_it(anyy: Run, home: Path, command: tuple[str, ...]) -> None:
    result = anyy("--profile", "ghost", *command)
    assert result.exit_code == 1
    assert result.stderr.startswith("error: profile 'ghost' does not exist")
    assert "`anyy profile create ghost`" in result.stderr
    assert "Traceback" not in result.output
    assert not (home / "profiles" / "ghost").exists()


@pytest.mark.parametrize("command", READ_COMMANDS, ids=" ".join)
def test_a1_reading_a_missing_profile_leaves_other_profiles_alone(
    anyy: Run, make_profile: MakeProfile, home: Path, command: tuple[str, ...]
) -> None:
    make_profile("work")
    before = sorted(p.relative_to(home) for p in home.rglob("*"))
    anyy("--profile", "ghost", *command)
    assert sorted(p.relative_to(home) for p in home.rglob("*")) == before


@pytest.mark.parametrize("verb", ["show", "tree", "export"])
def test_x1_missing_session_names_profile_and_lists(anyy: Run, make_profile: MakeProfile, verb: str) -> None:
    make_profile("work")
    result = anyy("--profile", "work", "sessions", verb, "ses_0000000000aa")
    assert result.exit_code == 1
    message = result.stderr
    assert message.startswith("error: no session 'ses_0000000000aa' in profile 'work'")
    assert "anyy sessions list --profile work" in message  # Chats
    assert "--kind background" in message  # Background
    assert "(Chats)" in message
    assert "(Background)" in message
    assert message.count("\n") == 1
    assert "Traceback" not in result.output


def test_x1_missing_session_in_search_filter(anyy: Run, make_profile: MakeProfile) -> None:
    make_profile()
    result = anyy("sessions", "search", "tea", "--session", "ses_0000000000aa")
    assert result.exit_code == 1
    assert result.stderr.startswith("error: no session 'ses_0000000000aa' in profile 'default'")


def test_a1_session_of_another_profile_is_not_found(
    anyy: Run, make_profile: MakeProfile, open_store: OpenStore
) -> None:
    work = make_profile("work")
    make_profile("default")
    with open_store(work) as store:
        sid = store.create_session(NewSession(title="work only")).id
    assert anyy("--profile", "work", "sessions", "show", sid).exit_code == 0

    result = anyy("sessions", "show", sid)

    assert result.exit_code == 1
    assert result.stderr.startswith(f"error: no session '{sid}' in profile 'default'")
    assert "a session of another profile needs that --profile" in result.stderr
    assert sid not in anyy("sessions", "list").stdout


def test_a1_usage_errors_keep_clicks_exit_status(anyy: Run, make_profile: MakeProfile) -> None:
    make_profile()
    result = anyy("sessions", "show")
    assert result.exit_code == 2
    assert "Missing argument 'ID'" in result.stderr


def test_a1_version(anyy: Run) -> None:
    result = anyy("--version")
    assert result.exit_code == 0
    assert result.stdout == "anyy, version 0.1.0\n"
