"""Residents (SPEC K3) of the in-memory store."""

from __future__ import annotations

import msgspec

from anyy.domain.errors import Conflict, NotFound
from anyy.domain.residents import Resident, ResidentPatch
from anyy.storage.memory.core import MemoryCore
from anyy.storage.memory.data import copied


def _missing(key: str) -> NotFound:
    return NotFound(f"no resident {key!r}: `anyy resident list` shows them")


class ResidentsPart(MemoryCore):
    def create_resident(self, resident: Resident) -> Resident:
        self._check_open()
        if any(r.name == resident.name for r in self.data.residents.values()):
            raise Conflict(f"a resident named {resident.name!r} exists: choose another name, or update it")
        now = self.clock()
        stored = msgspec.structs.replace(resident, created_at=now, updated_at=now)
        self.data.residents[stored.id] = stored
        return copied(stored)

    def get_resident(self, key: str) -> Resident:
        self._check_open()
        found = self.data.residents.get(key) or next((r for r in self.data.residents.values() if r.name == key), None)
        if found is None:
            raise _missing(key)
        return copied(found)

    def list_residents(self) -> list[Resident]:
        self._check_open()
        return copied(sorted(self.data.residents.values(), key=lambda r: r.name))

    def update_resident(self, resident_id: str, patch: ResidentPatch) -> Resident:
        self._check_open()
        current = self.data.residents.get(resident_id)
        if current is None:
            raise _missing(resident_id)
        self.data.residents[resident_id] = patch.apply(current, self.clock())
        return copied(self.data.residents[resident_id])

    def delete_resident(self, resident_id: str) -> None:
        self._check_open()
        if self.data.residents.pop(resident_id, None) is None:
            raise _missing(resident_id)
        self.data.wakes = [w for w in self.data.wakes if w[0] != resident_id]

    def claim_wake(self, resident_id: str, wake_at: float) -> bool:
        self._check_open()
        if (resident_id, wake_at) in self.data.wakes:
            return False
        self.data.wakes.append((resident_id, wake_at))
        return True
