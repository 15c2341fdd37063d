"""SPEC A1: the anyy home and the selected profile."""

from __future__ import annotations

from pathlib import Path

import platformdirs
import pytest

from anyy.domain.errors import InvalidInput
from anyy.profiles import anyy_home, get_profile, selected_profile_name


def test_a1_home_comes_from_anyy_home(home: Path) -> None:
    assert anyy_home() == home


def test_a1_home_defaults_to_the_platform_data_folder() -> None:
    assert anyy_home({}) == Path(platformdirs.user_data_dir("anyy"))
    assert anyy_home({"ANYY_HOME": "  "}) == Path(platformdirs.user_data_dir("anyy"))


def test_a1_relative_home_is_made_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert anyy_home({"ANYY_HOME": "here"}) == tmp_path / "here"


def test_a1_profile_defaults_to_default() -> None:
    assert selected_profile_name(None, {}) == "default"


def test_a1_profile_env_is_used_without_option() -> None:
    assert selected_profile_name(None, {"ANYY_PROFILE": "work"}) == "work"


def test_a1_profile_option_beats_env() -> None:
    assert selected_profile_name("home", {"ANYY_PROFILE": "work"}) == "home"


def test_a1_profile_env_read_from_the_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANYY_PROFILE", "work")
    assert selected_profile_name() == "work"


@pytest.mark.parametrize("name", ["Work", "../etc", "", "-x", "_x", "a b", "a" * 65, "é"])
def test_a1_invalid_profile_name_is_a_clear_error(name: str) -> None:
    with pytest.raises(InvalidInput, match=r"invalid profile name .*\(from --profile\).*lower-case"):
        selected_profile_name(name, {})


def test_a1_invalid_profile_name_from_env_names_the_variable() -> None:
    with pytest.raises(InvalidInput, match="from ANYY_PROFILE"):
        selected_profile_name(None, {"ANYY_PROFILE": "Bad/Name"})


def test_a1_longest_valid_profile_name_is_accepted(home: Path) -> None:
    name = "a" + "-_0" * 21
    assert len(name) == 64
    assert get_profile(home, name).path == home / "profiles" / name


def test_a1_profiles_live_under_the_home(home: Path) -> None:
    assert get_profile(home, "work").path == home / "profiles" / "work"
