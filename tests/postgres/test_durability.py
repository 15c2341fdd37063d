"""D10 on PostgreSQL: ``durability = "power"`` commits with ``synchronous_commit = on`` even where the
server's default is off; "process" leaves the server's setting."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from anyy.profiles import create_profile
from anyy.profiles.store import open_store


@pytest.mark.parametrize(("value", "expected"), [("process", "off"), ("power", "on")])
def test_d10_durability_chooses_synchronous_commit(database: str, tmp_path: Path, value: str, expected: str) -> None:
    with psycopg.connect(database, autocommit=True) as admin:
        dbname = admin.info.dbname
        admin.execute(f'ALTER DATABASE "{dbname}" SET synchronous_commit = off')  # a server tuned for speed
    profile = create_profile(tmp_path / "home", "pg")
    text = profile.config_path.read_text().replace('\nurl = ""\n', f'\nurl = "{database}"\n')
    profile.config_path.write_text(text.replace('\ndurability = "process"\n', f'\ndurability = "{value}"\n'))
    store = open_store(profile)
    try:
        row = store.conn.execute("SHOW synchronous_commit").fetchone()  # type: ignore[attr-defined]
    finally:
        store.close()
    assert row[0] == expected
