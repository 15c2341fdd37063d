"""A5: a profile backup holds every durable session, its objects, memory and settings, is consistent while
the profile is written to, and restores only what its manifest vouches for."""

from __future__ import annotations

import gzip
import io
import os
import sqlite3
import stat
import tarfile
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from anyy.cli.main import main as cli
from anyy.domain.entries import Attachment, EntryKind, NewEntry
from anyy.domain.errors import Conflict
from anyy.domain.queue import NewSubmission
from anyy.domain.sessions import NewSession
from anyy.profiles import Profile, ProfileExists, create_profile, get_profile
from anyy.profiles.backup import (
    MANIFEST,
    BackupError,
    backup_profile,
    read_manifest,
    restore_profile,
)
from anyy.profiles.home import profiles_root
from anyy.storage.sqlite import SqliteStore
from tests.killtest.gateway_process import GatewayProcess, RpcFailure

BIG = 70 * 1024  # past the store's body threshold: the body goes to objects/


def _store(profile: Profile) -> SqliteStore:
    return SqliteStore.open_profile(profile.path, profile=profile.name)


def _fill(profile: Profile) -> dict[str, list[tuple[int, str]]]:
    """Sessions with small and large entries, an attachment, a fork; returns each session's path."""
    store = _store(profile)
    try:
        first = store.create_session(NewSession(title="first"))
        store.append_entries(first.id, [NewEntry(kind=EntryKind.USER, text="hello")])
        store.append_entries(first.id, [NewEntry(kind=EntryKind.ASSISTANT, text="x" * BIG)])
        ref = store.put_object(b"attached bytes", media_type="text/plain")
        store.add_submission(
            first.id,
            NewSubmission(text="see attachment", attachments=[Attachment(object=ref.hash, name="a.txt", size=14)]),
        )
        fork = store.fork_session(first.id, None, title="fork")
        store.append_entries(fork.id, [NewEntry(kind=EntryKind.USER, text="y" * BIG)])
        second = store.create_session(NewSession(title="second", kind="background"))
        store.append_entries(second.id, [NewEntry(kind=EntryKind.USER, text="background work")])
        return {s: [(e.id, e.text) for e in store.path(s)] for s in (first.id, fork.id, second.id)}
    finally:
        store.close()


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _referenced_objects_present(profile: Profile) -> tuple[int, list[str]]:
    conn = sqlite3.connect(profile.db_path)
    try:
        hashes = {
            row[0]
            for row in conn.execute("SELECT obj FROM entries WHERE obj IS NOT NULL UNION SELECT obj FROM object_refs")
        }
        (check,) = conn.execute("PRAGMA integrity_check").fetchone()
        assert check == "ok"
    finally:
        conn.close()
    missing = [h for h in hashes if not (profile.objects_dir / h[:2] / h).is_file()]
    return len(hashes), missing


def test_a5_round_trip_keeps_sessions_entries_objects_memory_roles_and_config(tmp_path: Path) -> None:
    home = tmp_path / "home"
    profile = create_profile(home, "main")
    paths = _fill(profile)
    profile.user_memory_path.write_text("I like tea.\n")
    (profile.roles_dir / "scribe.toml").write_text((profile.roles_dir / "default.toml").read_text())
    profile.config_path.write_text(profile.config_path.read_text().replace("max_retries = 3", "max_retries = 5"))

    report = backup_profile(profile, tmp_path / "main.tar.gz")
    assert report.counts.sessions == 3
    assert report.counts.objects == 3
    assert report.counts.role_files == 2
    assert report.missing_objects == []
    restored = restore_profile(tmp_path / "main.tar.gz", home, "copy")
    assert restored.from_profile == "main"
    assert not restored.replaced

    copy = get_profile(home, "copy")
    store = _store(copy)
    try:
        assert {s: [(e.id, e.text) for e in store.path(s)] for s in paths} == paths
        assert [s.title for s in store.list_sessions().items] == ["second", "fork", "first"]
    finally:
        store.close()
    for folder in ("objects", "memory", "roles"):
        assert _files(copy.path / folder) == _files(profile.path / folder)
    assert copy.config_path.read_text() == profile.config_path.read_text()
    assert copy.load_config().retries.max_retries == 5
    assert _referenced_objects_present(copy)[1] == []


def test_a5_backup_while_another_thread_appends_is_consistent(tmp_path: Path) -> None:
    home = tmp_path / "home"
    profile = create_profile(home, "busy")
    _store(profile).close()
    written = threading.Semaphore(0)
    stop = threading.Event()
    errors: list[BaseException] = []

    def writer() -> None:
        store = _store(profile)
        try:
            session = store.create_session(NewSession(title="busy"))
            n = 0
            while not stop.is_set():
                n += 1
                body = f"{n} " + "z" * BIG if n % 3 == 0 else f"entry {n}"
                store.append_entries(session.id, [NewEntry(kind=EntryKind.USER, text=body)])
                if n % 10 == 0:
                    fork = store.fork_session(session.id, None)
                    store.append_entries(fork.id, [NewEntry(kind=EntryKind.USER, text=f"{n} fork " + "f" * BIG)])
                    if n % 20 == 0:
                        store.delete_session(fork.id)
                        store.maintain(1000)  # reclaims the deleted fork meanwhile
                written.release()
        except BaseException as exc:
            errors.append(exc)
            written.release()
        finally:
            store.close()

    thread = threading.Thread(target=writer)
    thread.start()
    reports = []
    try:
        for round_ in range(4):
            for _ in range(15):  # let the writer commit more before each backup: they overlap
                assert written.acquire(timeout=30), "the writer stalled"
            assert not errors, errors
            reports.append(backup_profile(profile, tmp_path / f"b{round_}.tar.gz"))
    finally:
        stop.set()
        thread.join()
    assert not errors, errors
    for round_, report in enumerate(reports):
        assert report.missing_objects == []
        restore_profile(Path(report.path), home, f"r{round_}")
        count, missing = _referenced_objects_present(get_profile(home, f"r{round_}"))
        assert count > 0
        assert missing == [], f"backup {round_}: objects referenced by the snapshot are missing"
    entries = [r.counts.entries for r in reports]
    assert entries == sorted(entries)
    assert entries[0] < entries[-1]


def test_a5_restore_refuses_to_overwrite_without_force_and_replaces_with_it(tmp_path: Path) -> None:
    home = tmp_path / "home"
    profile = create_profile(home, "main")
    _fill(profile)
    archive = tmp_path / "main.tar.gz"
    backup_profile(profile, archive)
    profile.user_memory_path.write_text("changed after the backup\n")

    with pytest.raises(ProfileExists) as refused:
        restore_profile(archive, home, "main")
    assert "'main'" in str(refused.value)
    assert "--force" in str(refused.value)
    assert profile.user_memory_path.read_text() == "changed after the backup\n"

    report = restore_profile(archive, home, "main", overwrite=True)
    assert report.replaced
    assert profile.user_memory_path.read_text() == ""
    assert sorted(p.name for p in profiles_root(home).iterdir()) == ["main"]  # nothing left aside


def _rewrite(archive: Path, target: Path, change: str) -> None:
    """A copy of ``archive`` whose member ``change`` has one byte flipped (the manifest kept as it was)."""
    with tarfile.open(archive, "r:gz") as source, tarfile.open(target, "w:gz") as out:
        for info in source:
            data = source.extractfile(info).read() if info.isfile() else b""  # type: ignore[union-attr]
            if info.name == change:
                data = bytes([data[0] ^ 1]) + data[1:]
            out.addfile(info, io.BytesIO(data))


def test_a5_corrupted_archive_is_refused_and_leaves_nothing_behind(tmp_path: Path) -> None:
    home = tmp_path / "home"
    profile = create_profile(home, "main")
    _fill(profile)
    archive = tmp_path / "main.tar.gz"
    backup_profile(profile, archive)
    names = [m.path for m in read_manifest(archive).members]
    before = sorted(p.name for p in profiles_root(home).iterdir())

    for member in ("state.db", next(n for n in names if n.startswith("objects/"))):
        bad = tmp_path / "bad.tar.gz"
        _rewrite(archive, bad, member)
        with pytest.raises(BackupError) as refused:
            restore_profile(bad, home, "other")
        assert member in str(refused.value)
        assert "corrupt" in str(refused.value)
        assert sorted(p.name for p in profiles_root(home).iterdir()) == before

    truncated = tmp_path / "truncated.tar.gz"
    truncated.write_bytes(archive.read_bytes()[: archive.stat().st_size // 2])
    with pytest.raises(BackupError):
        restore_profile(truncated, home, "other")
    not_backup = tmp_path / "plain.tar.gz"
    not_backup.write_bytes(gzip.compress(b"not a tar"))
    with pytest.raises(BackupError):
        restore_profile(not_backup, home, "other")
    assert sorted(p.name for p in profiles_root(home).iterdir()) == before
    assert MANIFEST == "manifest.json"


def test_a5_restore_refuses_while_the_gateway_runs_and_the_gateway_backs_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("ANYY_HOME", str(home))
    profile = create_profile(home, "live")
    _fill(profile)
    gateway = GatewayProcess(home, "live", cwd=tmp_path, log=tmp_path / "gateway.err")
    gateway.start()
    try:
        client = gateway.client()
        try:
            session = client.call("session.create", title="during backup")
            client.call("session.send", session_id=session["id"], text="hello")
            report = client.call("profile.backup")
            named = client.call("profile.backup", name="named.tar.gz")
            with pytest.raises(RpcFailure, match="plain file name"):
                client.call("profile.backup", name=str(tmp_path / "elsewhere.tar.gz"))
        finally:
            client.close()
        archive = Path(report["path"])
        assert archive.parent == profile.path / "backups"
        assert archive.name.startswith("anyy-live-")
        assert report["counts"]["sessions"] == 4
        assert named["path"] == str(profile.path / "backups" / "named.tar.gz")
        assert not (tmp_path / "elsewhere.tar.gz").exists()
        with pytest.raises(Conflict) as refused:
            restore_profile(archive, home, "live", overwrite=True)
        assert "anyy gateway stop --profile live" in str(refused.value)
        result = CliRunner().invoke(cli, ["restore", str(archive), "--profile", "live", "--force"])
        assert result.exit_code == 1
        assert "is running" in result.output
    finally:
        gateway.stop()
    restore_profile(archive, home, "live", overwrite=True)  # stopped: now it may
    store = _store(profile)
    try:
        assert any(s.title == "during backup" for s in store.list_sessions().items)
    finally:
        store.close()


def test_a5_cli_backup_and_restore(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("ANYY_HOME", str(home))
    monkeypatch.chdir(tmp_path)
    _fill(create_profile(home, "main"))
    runner = CliRunner()
    done = runner.invoke(cli, ["backup", "--profile", "main"])
    assert done.exit_code == 0, done.output
    assert "3 sessions" in done.output
    assert "3 objects" in done.output
    (archive,) = tmp_path.glob("anyy-main-*.tar.gz")
    again = runner.invoke(cli, ["backup", "--profile", "main", "-o", str(archive)])
    assert again.exit_code == 1
    assert "already exists" in again.output
    refused = runner.invoke(cli, ["restore", str(archive)])
    assert refused.exit_code == 1
    assert "--force" in refused.output
    assert "'main'" in refused.output
    forced = runner.invoke(cli, ["restore", str(archive), "--force"])
    assert forced.exit_code == 0
    assert "replaced profile 'main'" in forced.output
    other = runner.invoke(cli, ["--profile", "copy", "restore", str(archive)])
    assert other.exit_code == 0
    assert "restored profile 'copy'" in other.output


def test_d9_backup_archives_are_readable_by_their_owner_only(tmp_path: Path) -> None:
    profile = create_profile(tmp_path / "home", "main")
    _fill(profile)
    previous = os.umask(0o022)  # the common default: a file created plainly would be 0644
    try:
        report = backup_profile(profile, tmp_path / "main.tar.gz")
    finally:
        os.umask(previous)
    assert stat.S_IMODE(os.stat(report.path).st_mode) == 0o600
