"""Residents (SPEC K3) in SQL; PostgreSQL runs the same statements with its own placeholders."""

from __future__ import annotations

from typing import Any

import msgspec

from anyy.domain.errors import Conflict, NotFound
from anyy.domain.residents import Resident, ResidentPatch

_encode = msgspec.json.Encoder().encode


def _missing(key: str) -> NotFound:
    return NotFound(f"no resident {key!r}: `anyy resident list` shows them")


class ResidentsSql:
    """The resident methods of :class:`anyy.storage.protocol.SessionStore` over SQL (``?`` marks)."""

    clock: Any
    _tx: Any
    conn: Any

    def _sql(self, text: str) -> str:
        return text

    def _resident_rows(self, where: str, params: tuple[Any, ...]) -> list[Resident]:
        rows = self.conn.execute(self._sql(f"SELECT body FROM residents{where} ORDER BY name"), params).fetchall()
        return [msgspec.json.decode(row[0], type=Resident) for row in rows]

    def create_resident(self, resident: Resident) -> Resident:
        now = self.clock()
        stored = msgspec.structs.replace(resident, created_at=now, updated_at=now)
        with self._tx() as conn:
            taken = conn.execute(self._sql("SELECT 1 FROM residents WHERE name = ?"), (stored.name,)).fetchone()
            if taken:
                raise Conflict(f"a resident named {stored.name!r} exists: choose another name, or update it")
            conn.execute(
                self._sql("INSERT INTO residents (id, name, session_id, body, created_at) VALUES (?, ?, ?, ?, ?)"),
                (stored.id, stored.name, stored.session_id, _encode(stored).decode(), now),
            )
        return stored

    def get_resident(self, key: str) -> Resident:
        found = self._resident_rows(" WHERE id = ? OR name = ?", (key, key))
        if not found:
            raise _missing(key)
        return found[0]

    def list_residents(self) -> list[Resident]:
        return self._resident_rows("", ())

    def update_resident(self, resident_id: str, patch: ResidentPatch) -> Resident:
        with self._tx() as conn:
            row = conn.execute(self._sql("SELECT body FROM residents WHERE id = ?"), (resident_id,)).fetchone()
            if row is None:
                raise _missing(resident_id)
            resident = patch.apply(msgspec.json.decode(row[0], type=Resident), self.clock())
            conn.execute(
                self._sql("UPDATE residents SET body = ? WHERE id = ?"), (_encode(resident).decode(), resident_id)
            )
        return resident

    def delete_resident(self, resident_id: str) -> None:
        with self._tx() as conn:
            if conn.execute(self._sql("DELETE FROM residents WHERE id = ?"), (resident_id,)).rowcount == 0:
                raise _missing(resident_id)
            conn.execute(self._sql("DELETE FROM resident_wakes WHERE resident_id = ?"), (resident_id,))

    def claim_wake(self, resident_id: str, wake_at: float) -> bool:
        with self._tx() as conn:
            cursor = conn.execute(
                self._sql(
                    "INSERT INTO resident_wakes (resident_id, wake_at, claimed_at) VALUES (?, ?, ?) "
                    "ON CONFLICT (resident_id, wake_at) DO NOTHING"
                ),
                (resident_id, wake_at, self.clock()),
            )
            return bool(cursor.rowcount == 1)
