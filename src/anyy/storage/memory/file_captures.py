"""File captures (W2) of the in-memory store."""

from __future__ import annotations

from collections.abc import Sequence

from anyy.domain.file_captures import FileCapture, NewFileCapture, stored
from anyy.storage.memory.core import MemoryCore
from anyy.storage.memory.data import copied


class FileCapturesPart(MemoryCore):
    def add_file_capture(self, new: NewFileCapture) -> FileCapture:
        self._check_open()
        captures = self.data.file_captures
        kept = stored(new, capture_id=(captures[-1].id + 1) if captures else 1, created_at=self.clock())
        captures.append(kept)
        return copied(kept)

    def list_file_captures(
        self, *, entry_ids: Sequence[int] | None = None, execution_id: str | None = None
    ) -> list[FileCapture]:
        self._check_open()
        wanted = set(entry_ids) if entry_ids is not None else set()
        return [
            c
            for c in self.data.file_captures
            if c.entry_id in self.data.entries
            and ((execution_id is not None and c.execution_id == execution_id) or c.entry_id in wanted)
        ]

    def file_capture_commits(self) -> set[str]:
        self._check_open()
        return {c.commit for c in self.data.file_captures if c.entry_id in self.data.entries}
