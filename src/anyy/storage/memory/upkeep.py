"""Delete, upkeep, objects and snapshots of the in-memory store."""

from __future__ import annotations

from pathlib import Path

import msgspec

from anyy.domain.errors import NotFound
from anyy.domain.queue import ACTIVE_EXECUTION_STATES
from anyy.storage import rules
from anyy.storage.memory.data import MemoryData, ObjectRecord
from anyy.storage.memory.search import SearchPart
from anyy.storage.objects import ObjectFiles, check_hash
from anyy.storage.protocol import Maintenance, ObjectRef, StoreSnapshot

SNAPSHOT_FILE = "memory-store.msgpack"


class UpkeepPart(SearchPart):
    def delete_session(self, session_id: str) -> None:
        record = self._record(session_id)
        data = self.data
        running = sum(
            1 for e in data.executions.values() if e.session_id == session_id and e.state in ACTIVE_EXECUTION_STATES
        )
        pending = sum(
            1
            for r in data.submissions.values()
            if r.submission.session_id == session_id and r.submission.state == "pending"
        )
        if running or pending:
            raise rules.unfinished_work(session_id, running, pending)
        record.active = False
        data.channel_senders = [p for p in data.channel_senders if p.session_id != session_id]  # L2
        record.session.head = None
        record.fork_point = None
        for submission_id in [sid for sid, r in data.submissions.items() if r.submission.session_id == session_id]:
            del data.submissions[submission_id]
        for execution_id in [eid for eid, e in data.executions.items() if e.session_id == session_id]:
            del data.executions[execution_id]
        data.deleted.append(record.num)

    def _referenced(self) -> set[str]:
        """Objects something still references: an entry (its body, its attachments) or a queue item."""
        data = self.data
        found = {obj for kept in data.entries.values() for obj in kept.refs}
        found.update(att.object for r in data.submissions.values() for att in r.submission.attachments)
        return found

    def _reclaim(self) -> int:
        """Remove what deleted sessions appended and no live session reaches any more (and their objects)."""
        data = self.data
        reachable: set[int] = set()
        for record in data.sessions.values():
            if record.active:
                reachable |= self._tree_ids(record)
        removed = 0
        candidates: set[str] = set()
        for num in list(data.deleted):
            found = self._session_of_num(num)
            if found is None:
                data.deleted.remove(num)
                continue
            record = found
            for entry_id in [i for i in record.own if i not in reachable]:
                candidates.update(data.entries.pop(entry_id).refs)
                removed += 1
            record.own = [i for i in record.own if i in reachable]
            if not record.own:
                del data.sessions[record.session.id]
                del data.nums[num]
                data.deleted.remove(num)
        for obj in candidates - self._referenced():
            data.objects.pop(obj, None)
        return removed

    def maintain(self, budget: int = 2000) -> Maintenance:
        self._check_open()
        collected = self._reclaim()
        now = self.clock()
        if now - self.data.last_sweep >= rules.SWEEP_INTERVAL:
            self.data.last_sweep = now
            used = self._referenced()
            unused = [
                h
                for h, o in self.data.objects.items()
                if h not in used and o.created_at < now - rules.UNUSED_OBJECT_GRACE
            ]
            for object_hash in unused:
                del self.data.objects[object_hash]
            collected += len(unused)
        return Maintenance(indexed=0, collected=collected, more=False)

    # -- objects -----------------------------------------------------------------------------------
    def put_object(self, data: bytes, *, media_type: str = "application/octet-stream") -> ObjectRef:
        self._check_open()
        object_hash = ObjectFiles.hash_of(data)
        if object_hash not in self.data.objects:
            self.data.objects[object_hash] = ObjectRecord(
                data=bytes(data), media_type=media_type, created_at=self.clock()
            )
        return ObjectRef(hash=object_hash, size=len(data), media_type=media_type)

    def object_bytes(self) -> int:
        self._check_open()
        return sum(len(record.data) for record in self.data.objects.values())

    def read_object(self, object_hash: str) -> bytes:
        self._check_open()
        found = self.data.objects.get(check_hash(object_hash))
        if found is None:
            raise NotFound(f"object {object_hash} is missing from profile {self.profile!r}")
        return found.data

    # -- snapshots ---------------------------------------------------------------------------------
    def snapshot(self, directory: Path) -> StoreSnapshot:
        self._check_open()
        target = Path(directory) / SNAPSHOT_FILE
        if target.exists():
            raise rules.snapshot_target_exists(target)
        encoded = msgspec.msgpack.encode(self.data)
        try:
            target.write_bytes(encoded)
        except OSError:
            target.unlink(missing_ok=True)
            raise
        data = self.data
        return StoreSnapshot(
            files=[SNAPSHOT_FILE],
            sessions=sum(1 for r in data.sessions.values() if r.active),
            entries=len(data.entries),
            submissions=len(data.submissions),
            objects=sorted(self._referenced()),
        )


def load_snapshot(directory: Path) -> MemoryData | None:
    """The data a snapshot in ``directory`` holds, or None when there is none."""
    try:
        raw = (Path(directory) / SNAPSHOT_FILE).read_bytes()
    except FileNotFoundError:
        return None
    return msgspec.msgpack.decode(raw, type=MemoryData)
