"""D11: ``anyy doctor`` checks a profile's store, ``--repair`` repairs what is safe and says what it did,
and repairs wait while the profile's Gateway runs (checks do not). The store's checks themselves are
proven on every backend by tests/conformance/test_check.py; here, the command on real profiles."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from click.testing import CliRunner, Result

from anyy.cli.main import main
from anyy.domain.queue import NewSubmission
from anyy.domain.sessions import NewSession
from anyy.profiles import Profile, create_profile
from anyy.storage.sqlite import SqliteStore
from tests.cli.live import StartGateway


def _anyy(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def _damaged_profile(home: Path) -> tuple[Profile, str]:
    """A profile whose Gateway died mid-turn, whose search index lost its rows, with a half-written and a
    stray object file: what a crash, a bug and a careless hand leave. Returns the execution left running."""
    profile = create_profile(home, "default")
    store = SqliteStore.open_profile(profile.path, profile="default")
    try:
        session = store.create_session(NewSession(title="interrupted"))
        submission = store.add_submission(session.id, NewSubmission(text="a question about marmalade"))
        execution = store.start_execution(session.id, [submission.id], record_inputs=True)
        while store.maintain().more:
            pass
    finally:
        store.close()
    with sqlite3.connect(profile.db_path) as conn:
        conn.execute("INSERT INTO entries_fts (entries_fts) VALUES ('delete-all')")
    stray = profile.objects_dir / "ab"
    stray.mkdir(parents=True, exist_ok=True)
    (stray / ("ab" + "0" * 62)).write_bytes(b"not in the store")
    (stray / f".{'ab' + '1' * 62}.123.tmp").write_bytes(b"half-writ")
    return profile, execution.id


def test_d11_doctor_finds_then_repairs_a_damaged_profile(home: Path) -> None:
    profile, execution_id = _damaged_profile(home)
    checked = _anyy("doctor")
    assert checked.exit_code == 1, checked.output
    assert "running work  1 problem(s): 1 executions left running with no Gateway" in checked.output
    assert "search index  1 problem(s)" in checked.output
    assert "objects       2 problem(s)" in checked.output
    assert "`anyy doctor --repair` repairs" in checked.output

    repaired = _anyy("doctor", "--repair")
    assert repaired.exit_code == 0, repaired.output
    assert "repaired 4 problem(s); nothing left" in repaired.output
    assert not [p for p in profile.objects_dir.rglob("*") if p.is_file()]
    store = SqliteStore.open_profile(profile.path, profile="default")
    try:
        assert store.get_execution(execution_id).state == "interrupted"
        assert len(store.search("marmalade")) == 1
    finally:
        store.close()

    again = _anyy("doctor", "--json")
    assert again.exit_code == 0, again.output
    report = json.loads(again.output)
    assert report["backend"] == "sqlite"
    assert report["left"] == 0
    checks = ["integrity", "search_index", "objects", "executions", "queue", "file_captures"]
    assert [f["check"] for f in report["findings"]] == checks


def test_d11_repair_waits_for_the_gateway_to_stop_and_checking_does_not(
    home: Path, start_gateway: StartGateway
) -> None:
    start_gateway()
    refused = _anyy("doctor", "--repair")
    assert refused.exit_code == 1
    assert "is running" in refused.output
    assert "anyy gateway stop --profile default" in refused.output
    checked = _anyy("doctor", "--json")
    assert checked.exit_code == 0, checked.output
    report = json.loads(checked.output)
    assert report["gateway_pid"] is not None
    executions = next(f for f in report["findings"] if f["check"] == "executions")
    assert "the Gateway is running" in executions["skipped"]
