"""Printing for people and for programs (``--json``)."""

from __future__ import annotations

import datetime as dt
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import click
import msgspec

from anyy.domain.entries import Entry
from anyy.domain.errors import InvalidInput


def _encode_extra(value: Any) -> Any:
    if isinstance(value, Path):
        return str(value)
    raise NotImplementedError(f"can't print a {type(value).__name__} as JSON")


def echo_json(value: Any) -> None:
    """One indented JSON document on stdout."""
    raw = msgspec.json.encode(value, enc_hook=_encode_extra)
    click.echo(msgspec.json.format(raw, indent=2).decode())


def entry_record(entry: Entry) -> dict[str, Any]:
    """An entry as plain JSON values, its kind spoken by name (as in the JSONL export)."""
    record: dict[str, Any] = msgspec.to_builtins(entry)
    record["kind"] = entry.kind.label
    return record


def when(timestamp: float, *, zone: bool = False) -> str:
    """A local date and time to the minute, for listings; with ``zone``, marked with the zone's name (where
    times of other zones are shown beside it, as a schedule's are)."""
    return dt.datetime.fromtimestamp(timestamp).astimezone().strftime("%Y-%m-%d %H:%M %Z" if zone else "%Y-%m-%d %H:%M")


def write_text_file(path: Path, chunks: Iterable[str]) -> None:
    """Write a whole file through a temporary one: an interrupted export leaves no half file behind."""
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:
        # The temporary file's name means nothing to the person who asked for ``path``.
        raise InvalidInput(f"can't write {path}: {exc.strerror or exc} (in {path.parent})") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            for chunk in chunks:
                out.write(chunk)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
