"""D10: the profile setting ``[store] durability`` chooses what an acknowledged write survives: SQLite's
``synchronous`` (NORMAL for "process", FULL for "power") on the store the Gateway and the CLI open."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from anyy.profiles import Profile, create_profile
from anyy.profiles.store import open_store
from anyy.profiles.tomlfile import FileError

NORMAL, FULL = 1, 2  # PRAGMA synchronous's answers


def _synchronous(store: object) -> int:
    conn = store.conn  # type: ignore[attr-defined]  # the SQLite backend's own connection
    assert isinstance(conn, sqlite3.Connection)
    return int(conn.execute("PRAGMA synchronous").fetchone()[0])


def _with_durability(tmp_path: Path, value: str | None) -> Profile:
    profile = create_profile(tmp_path / "home", "p")
    if value is not None:
        text = profile.config_path.read_text()
        assert '\ndurability = "process"\n' in text, "the default config names the setting"
        profile.config_path.write_text(text.replace('\ndurability = "process"\n', f'\ndurability = "{value}"\n'))
    return profile


@pytest.mark.parametrize(("value", "expected"), [(None, NORMAL), ("process", NORMAL), ("power", FULL)])
def test_d10_durability_chooses_sqlites_synchronous(tmp_path: Path, value: str | None, expected: int) -> None:
    profile = _with_durability(tmp_path, value)
    store = open_store(profile)
    try:
        assert _synchronous(store) == expected
    finally:
        store.close()


def test_d10_an_unknown_durability_is_an_error_naming_the_key(tmp_path: Path) -> None:
    profile = _with_durability(tmp_path, "disk")
    with pytest.raises(FileError, match="durability"):
        open_store(profile)
