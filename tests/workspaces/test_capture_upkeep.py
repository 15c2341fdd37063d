"""W4: a session's delete releases the captures no other session reaches (a fork keeps what it shares),
and ``anyy doctor`` checks the capture store, gives a lost ref back and prunes what nobody reaches."""

from __future__ import annotations

from pathlib import Path

from anyy.domain.file_captures import NewFileCapture
from anyy.domain.sessions import NewSession
from anyy.profiles import create_profile
from anyy.profiles.doctor import doctor
from anyy.profiles.store import open_store
from anyy.workspaces.captures import CAPTURES_DIR, CaptureStore
from tests.conformance.support import drain, user


def test_w4_delete_releases_captures_only_the_deleted_session_reached(tmp_path: Path) -> None:
    profile = create_profile(tmp_path / "home", "w4")
    work = tmp_path / "work"
    work.mkdir()
    captures = CaptureStore(profile.path / CAPTURES_DIR)
    store = open_store(profile)
    try:
        session = store.create_session(NewSession(title="original"))
        first, second = store.append_entries(session.id, [user("one"), user("two")])

        def capture(session_id: str, entry_id: int, text: str) -> str:
            (work / "file.txt").write_text(text)
            commit = captures.capture(work).commit
            store.add_file_capture(
                NewFileCapture(
                    session_id=session_id, entry_id=entry_id, commit=commit, workspace=str(work), kind="after"
                )
            )
            return commit

        shared = capture(session.id, first.id, "shared by the fork\n")
        original_only = capture(session.id, second.id, "only the original reaches this\n")
        fork = store.fork_session(session.id, at=first.id)
        (own,) = store.append_entries(fork.id, [user("fork")])
        forks = capture(fork.id, own.id, "the fork's own\n")
        store.delete_session(session.id)
        drain(store)
        assert store.file_capture_commits() == {shared, forks}
    finally:
        store.close()

    report = doctor(profile, repair=False)
    finding = next(f for f in report.findings if f.check == "file_captures")
    assert finding.problems == 0
    assert "1 capture(s) no session reaches" in finding.details[0]
    assert captures.exists(original_only)  # released only by a repair (or a Gateway's upkeep)
    (profile.path / CAPTURES_DIR / "refs" / "anyy" / "captures" / shared).unlink()  # a lost ref
    report = doctor(profile, repair=True)
    finding = next(f for f in report.findings if f.check == "file_captures")
    assert (finding.problems, finding.repaired) == (1, 1)
    assert not captures.exists(original_only)
    assert captures.exists(shared)
    assert captures.exists(forks)
    assert captures.check() == []
    assert report.left == 0
