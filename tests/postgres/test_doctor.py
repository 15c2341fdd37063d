"""D11 on PostgreSQL: ``anyy doctor`` checks and repairs a profile whose sessions live in PostgreSQL."""

from __future__ import annotations

import json
from pathlib import Path

from anyy.domain.queue import NewSubmission
from anyy.domain.sessions import NewSession
from anyy.profiles import create_profile
from anyy.storage.postgres import PostgresStore
from tests.postgres.conftest import Run


def test_d11_doctor_repairs_a_postgresql_profile(database: str, home: Path, anyy: Run) -> None:
    profile = create_profile(home, "default")
    profile.config_path.write_text(profile.config_path.read_text().replace('\nurl = ""\n', f'\nurl = "{database}"\n'))
    store = PostgresStore(database, profile="default")
    try:
        session = store.create_session(NewSession(title="interrupted"))
        submission = store.add_submission(session.id, NewSubmission(text="left running"))
        execution = store.start_execution(session.id, [submission.id], record_inputs=True)
    finally:
        store.close()

    checked = anyy("doctor", "--json")
    assert checked.exit_code == 1, checked.output
    report = json.loads(checked.output)
    assert report["backend"] == "postgresql"
    assert report["left"] == 1

    repaired = anyy("doctor", "--repair")
    assert repaired.exit_code == 0, repaired.output
    assert "(PostgreSQL store)" in repaired.output
    assert "repaired 1 problem(s); nothing left" in repaired.output
    store = PostgresStore(database, profile="default")
    try:
        assert store.get_execution(execution.id).state == "interrupted"
        assert store.get_submission(submission.id).state == "interrupted"
    finally:
        store.close()
