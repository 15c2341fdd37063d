"""The in-memory ``SessionStore``, its parts assembled."""

from __future__ import annotations

from pathlib import Path

from anyy.storage.memory.channels import ChannelsPart
from anyy.storage.memory.check import CheckPart
from anyy.storage.memory.costs import CostsPart
from anyy.storage.memory.data import MemoryData
from anyy.storage.memory.delegation import DelegationPart
from anyy.storage.memory.file_captures import FileCapturesPart
from anyy.storage.memory.residents import ResidentsPart
from anyy.storage.memory.schedules import SchedulesPart
from anyy.storage.memory.starts import StartsPart
from anyy.storage.memory.upkeep import load_snapshot
from anyy.storage.ownership import SoloOwnership


class MemoryStore(
    StartsPart,
    SchedulesPart,
    CheckPart,
    SoloOwnership,
    DelegationPart,
    ResidentsPart,
    FileCapturesPart,
    ChannelsPart,
    CostsPart,
):
    """Everything in one :class:`MemoryData`; stores opened on the same data see the same sessions.

    Each method checks everything before it changes anything, so a refused call leaves no trace, as a
    rolled-back transaction would. Use it from one thread, like every store.
    """

    @classmethod
    def from_snapshot(cls, directory: Path, *, profile: str = "default") -> MemoryStore:
        """A store holding what :meth:`snapshot` wrote into ``directory`` (empty when nothing was)."""
        return cls(load_snapshot(directory) or MemoryData(), profile=profile)
