"""SPEC B4 and M3: roles are files in the profile setting identity and Soul, nothing else."""

from __future__ import annotations

from pathlib import Path

import pytest

from anyy.domain.errors import InvalidInput, NotFound
from anyy.profiles import FileError, Profile, RoleNotFound, create_profile


@pytest.fixture
def profile(home: Path) -> Profile:
    return create_profile(home, "default")


def test_b4_new_profile_has_the_default_role(profile: Profile) -> None:
    assert profile.list_roles() == ["default"]
    role = profile.load_role("default")
    assert role.name == "default"
    assert role.path == profile.roles_dir / "default.toml"
    assert role.identity.strip()
    assert role.soul.strip()


def test_b4_a_role_file_adds_a_role(profile: Profile) -> None:
    (profile.roles_dir / "scribe.toml").write_text(
        'description = "Takes notes"\nidentity = "You are a scribe."\nsoul = "Terse."\n', encoding="utf-8"
    )
    assert profile.list_roles() == ["default", "scribe"]
    role = profile.load_role("scribe")
    assert (role.identity, role.soul, role.description) == ("You are a scribe.", "Terse.", "Takes notes")


def test_b4_unknown_role_is_a_clear_error(profile: Profile) -> None:
    with pytest.raises(RoleNotFound) as caught:
        profile.load_role("scribe")
    message = str(caught.value)
    assert "no role 'scribe' in profile 'default'" in message
    assert str(profile.roles_dir) in message
    assert "the roles are: default" in message
    assert isinstance(caught.value, NotFound)


def test_b4_files_that_are_not_roles_are_not_listed(profile: Profile) -> None:
    (profile.roles_dir / "notes.txt").write_text("x", encoding="utf-8")
    (profile.roles_dir / "Bad Name.toml").write_text("x", encoding="utf-8")
    (profile.roles_dir / "dir.toml").mkdir()
    assert profile.list_roles() == ["default"]


def test_b4_invalid_role_name_is_refused(profile: Profile) -> None:
    with pytest.raises(InvalidInput, match=r"invalid role name '\.\./default'"):
        profile.load_role("../default")


def test_b4_role_missing_soul_names_the_key_and_file(profile: Profile) -> None:
    path = profile.roles_dir / "half.toml"
    path.write_text('identity = "x"\n', encoding="utf-8")
    with pytest.raises(FileError, match=rf"role file roles/half.toml \({path}\): missing key 'soul' at the top level"):
        profile.load_role("half")


def test_b4_role_with_an_unknown_key_lists_the_role_keys(profile: Profile) -> None:
    (profile.roles_dir / "typo.toml").write_text('identity = "x"\nsoul = "y"\nsoull = "z"\n', encoding="utf-8")
    with pytest.raises(FileError, match=r"unknown key 'soull' at the top level \(the keys there are: description"):
        profile.load_role("typo")


@pytest.mark.parametrize("key", ["tools", "codemode", "model"])
def test_m3_a_role_never_sets_tools_or_model(profile: Profile, key: str) -> None:
    (profile.roles_dir / "greedy.toml").write_text(f'identity = "x"\nsoul = "y"\n{key} = ["shell"]\n', encoding="utf-8")
    with pytest.raises(FileError, match=rf"unknown key '{key}': a role sets identity and Soul only; .*config.toml"):
        profile.load_role("greedy")


def test_b4_roles_of_a_missing_folder_are_none(home: Path) -> None:
    assert Profile(name="ghost", home=home).list_roles() == []
