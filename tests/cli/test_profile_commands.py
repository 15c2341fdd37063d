"""``anyy profile list|create|show|path`` and how the profile is selected (SPEC A1, A4, B4)."""

from __future__ import annotations

import json
from pathlib import Path

from anyy.domain.sessions import NewSession
from tests.cli.conftest import MakeProfile, OpenStore, Run


def test_a1_profile_create_makes_every_part(anyy: Run, home: Path) -> None:
    result = anyy("profile", "create", "work")
    assert result.exit_code == 0, result.output
    folder = home / "profiles" / "work"
    assert f"profile 'work' ready at {folder}" in result.stdout
    for part in ("config.toml", "state.db", "objects", "memory/USER.md", "memory/MEMORY.md", "roles/default.toml"):
        assert (folder / part).exists(), part


def test_a1_profile_create_refuses_an_existing_one(anyy: Run) -> None:
    assert anyy("profile", "create", "work").exit_code == 0
    result = anyy("profile", "create", "work")
    assert result.exit_code == 1
    assert result.stderr.startswith("error: profile 'work' already exists")
    assert "--exist-ok" in result.stderr
    assert anyy("profile", "create", "work", "--exist-ok").exit_code == 0


def test_a1_profile_create_refuses_a_bad_name(anyy: Run, home: Path) -> None:
    result = anyy("profile", "create", "My Profile")
    assert result.exit_code == 1
    assert "error: invalid profile name 'My Profile'" in result.stderr
    assert not (home / "profiles" / "My Profile").exists()


def test_a1_profile_list_marks_the_selected_one(anyy: Run, make_profile: MakeProfile) -> None:
    default = make_profile("default")
    work = make_profile("work")
    lines = anyy("--profile", "work", "profile", "list").stdout.splitlines()
    assert [line.split() for line in lines] == [["default", str(default.path)], ["*", "work", str(work.path)]]


def test_a1_profile_list_json(anyy: Run, make_profile: MakeProfile, home: Path) -> None:
    make_profile("default")
    make_profile("work")
    listed = json.loads(anyy("profile", "list", "--json").stdout)
    assert listed == [
        {"name": "default", "path": str(home / "profiles" / "default"), "selected": True},
        {"name": "work", "path": str(home / "profiles" / "work"), "selected": False},
    ]


def test_a1_profile_list_without_profiles_says_how_to_create(anyy: Run) -> None:
    result = anyy("profile", "list")
    assert result.exit_code == 0
    assert result.stdout == ""
    assert "anyy profile create NAME" in result.stderr
    assert json.loads(anyy("profile", "list", "--json").stdout) == []


def test_a1_profile_show_summarises(anyy: Run, make_profile: MakeProfile, open_store: OpenStore, home: Path) -> None:
    profile = make_profile("work")
    (profile.roles_dir / "scribe.toml").write_text('identity = "i"\nsoul = "s"\n', encoding="utf-8")
    with open_store(profile) as store:
        store.create_session(NewSession(kind="chat"))
        store.create_session(NewSession(kind="chat"))
        store.create_session(NewSession(kind="background"))

    result = anyy("profile", "show", "--profile", "work")

    assert result.exit_code == 0, result.output
    out = result.stdout
    assert f"folder    {profile.path}" in out
    assert "model     offline/offline" in out
    assert "roles     default, scribe" in out
    assert "sessions  2 chats, 1 background" in out

    shown = json.loads(anyy("profile", "show", "work", "--json").stdout)
    assert shown["name"] == "work"
    assert shown["path"] == str(home / "profiles" / "work")
    assert shown["model"] == {"provider": "offline", "model": "offline", "effort": ""}
    assert shown["roles"] == ["default", "scribe"]
    assert shown["sessions"] == {"chat": 2, "background": 1}
    assert shown["memory"]["user"].endswith("memory/USER.md")


def test_a1_profile_show_reports_a_broken_config(anyy: Run, make_profile: MakeProfile) -> None:
    profile = make_profile()
    profile.config_path.write_text("[model]\ncolour = 1\n", encoding="utf-8")
    result = anyy("profile", "show")
    assert result.exit_code == 1
    assert result.stderr == f"error: config.toml ({profile.config_path}): unknown key 'colour' in [model] " + (
        "(the keys there are: effort, model, provider)\n"
    )


def test_a1_profile_path_prints_the_folder(anyy: Run, make_profile: MakeProfile) -> None:
    profile = make_profile("work")
    assert anyy("profile", "path", "work").stdout == f"{profile.path}\n"
    assert anyy("--profile", "work", "profile", "path").stdout == f"{profile.path}\n"


def test_a1_profile_env_is_used_without_option(anyy: Run, make_profile: MakeProfile) -> None:
    work = make_profile("work")
    make_profile("default")
    assert anyy("profile", "path", env={"ANYY_PROFILE": "work"}).stdout == f"{work.path}\n"


def test_a1_profile_option_beats_env(anyy: Run, make_profile: MakeProfile) -> None:
    make_profile("work")
    default = make_profile("default")
    env = {"ANYY_PROFILE": "work"}
    assert anyy("--profile", "default", "profile", "path", env=env).stdout == f"{default.path}\n"
    assert anyy("profile", "path", "--profile", "default", env=env).stdout == f"{default.path}\n"


def test_a1_command_option_beats_group_option(anyy: Run, make_profile: MakeProfile) -> None:
    work = make_profile("work")
    make_profile("default")
    assert anyy("--profile", "default", "profile", "path", "--profile", "work").stdout == f"{work.path}\n"


def test_a1_bad_profile_name_from_env_is_reported(anyy: Run) -> None:
    result = anyy("profile", "path", env={"ANYY_PROFILE": "Not/Valid"})
    assert result.exit_code == 1
    assert result.stderr.startswith("error: invalid profile name 'Not/Valid' (from ANYY_PROFILE)")
