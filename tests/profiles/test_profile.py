"""SPEC A1, A4: creating, finding and listing profiles."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from anyy.domain.errors import Conflict, NotFound
from anyy.profiles import ProfileExists, ProfileNotFound, create_profile, get_profile, list_profiles


def test_a1_create_makes_the_profile_folder(home: Path) -> None:
    profile = create_profile(home, "work")
    assert profile.path == home / "profiles" / "work"
    assert profile.exists()
    assert profile.config_path.is_file()
    assert profile.objects_dir.is_dir()
    assert (profile.roles_dir / "default.toml").is_file()
    # state.db belongs to the storage layer: made when the store first opens the profile.
    assert not profile.db_path.exists()


def test_a1_profile_folder_is_private(home: Path) -> None:
    profile = create_profile(home, "work")
    assert stat.S_IMODE(profile.path.stat().st_mode) == 0o700


def test_a4_memory_files_are_created_empty(home: Path) -> None:
    profile = create_profile(home, "work")
    assert profile.user_memory_path == profile.path / "memory" / "USER.md"
    assert profile.memory_path == profile.path / "memory" / "MEMORY.md"
    assert profile.user_memory_path.read_text(encoding="utf-8") == ""
    assert profile.memory_path.read_text(encoding="utf-8") == ""


def test_a1_create_refuses_an_existing_profile(home: Path) -> None:
    create_profile(home, "work")
    with pytest.raises(ProfileExists, match=r"profile 'work' already exists at .*--exist-ok"):
        create_profile(home, "work")
    assert issubclass(ProfileExists, Conflict)


def test_a1_create_exist_ok_keeps_what_the_person_wrote(home: Path) -> None:
    profile = create_profile(home, "work")
    profile.config_path.write_text('[model]\nmodel = "mine"\n', encoding="utf-8")
    profile.user_memory_path.write_text("I like tea.\n", encoding="utf-8")
    profile.memory_path.unlink()
    (profile.roles_dir / "default.toml").unlink()

    again = create_profile(home, "work", exist_ok=True)

    assert again == profile
    assert profile.load_config().model.model == "mine"
    assert profile.user_memory_path.read_text(encoding="utf-8") == "I like tea.\n"
    assert profile.memory_path.exists()
    assert profile.list_roles() == ["default"]
    assert not list(profile.path.rglob("*.tmp"))  # no temporary file left behind


def test_a1_create_over_a_file_is_refused(home: Path) -> None:
    (home / "profiles").mkdir(parents=True)
    (home / "profiles" / "work").write_text("not a folder", encoding="utf-8")
    with pytest.raises(ProfileExists, match="is not a folder"):
        create_profile(home, "work", exist_ok=True)


def test_a1_getting_a_missing_profile_creates_nothing(home: Path) -> None:
    profile = get_profile(home, "ghost")
    assert not profile.exists()
    with pytest.raises(ProfileNotFound) as caught:
        profile.require()
    assert "`anyy profile create ghost`" in str(caught.value)
    assert isinstance(caught.value, NotFound)
    assert profile.load_config().model.provider == "offline"  # defaults, read-only
    assert not home.exists()


def test_a1_list_profiles_is_sorted_and_skips_strays(home: Path) -> None:
    assert list_profiles(home) == []
    for name in ("work", "default", "zeta"):
        create_profile(home, name)
    (home / "profiles" / ".hidden").mkdir()
    (home / "profiles" / "stray.txt").write_text("", encoding="utf-8")
    assert [p.name for p in list_profiles(home)] == ["default", "work", "zeta"]
