"""Attachments of the context's user messages, for the model request: images (SPEC N5) and every other
file as its text (U5, see :mod:`anyy.runtime.file_text`).

A stored context carries the payload of a user entry that has attachments (``carries_payload``), so the
attachments are read from the context itself, with no lookup per entry; their bytes are read from the
profile's objects when a context's messages are built (the runtime keeps them with the session's
messages, see ``anyy.runtime.contexts``).
"""

from __future__ import annotations

import operator
from itertools import compress
from typing import Any

import msgspec

from anyy.domain.context import ModelContext
from anyy.domain.entries import EntryKind
from anyy.domain.model_io import AttachedPart, ImagePart
from anyy.runtime.file_text import file_part
from anyy.storage.protocol import SessionStore

AttachmentRef = tuple[str, str, str]  # object, media type, name
_decoder = msgspec.json.Decoder(dict[str, Any])
_USER = int(EntryKind.USER)
_payload_of = operator.itemgetter(3)


def attachment_refs(data: dict[str, Any]) -> tuple[AttachmentRef, ...]:
    """The attachments named by a user entry's payload."""
    attachments = data.get("attachments") or []
    return tuple(
        (str(a.get("object", "")), str(a.get("media_type", "")), str(a.get("name", "")))
        for a in attachments
        if isinstance(a, dict) and a.get("object")
    )


def read_attachments(store: SessionStore, refs: tuple[AttachmentRef, ...]) -> tuple[AttachedPart, ...]:
    """Images as images, any other file as the text the model reads of it."""
    parts: list[AttachedPart] = []
    for obj, media_type, name in refs:
        data = store.read_object(obj)
        if media_type.startswith("image/"):
            parts.append(ImagePart(media_type=media_type, data=data, name=name))
        else:
            parts.append(file_part(obj, data, name, media_type))
    return tuple(parts)


def part_size(part: AttachedPart) -> int:
    """Bytes a kept part costs (for the context cache's bound)."""
    return len(part.data) if isinstance(part, ImagePart) else len(part.text) + len(part.note)


def context_attachments(
    store: SessionStore, session_id: str, context: ModelContext
) -> dict[int, tuple[AttachedPart, ...]]:
    """The attachments of every user entry of ``context``, by entry id (run on the store thread)."""
    found: dict[int, tuple[AttachedPart, ...]] = {}
    # Only a user message with attachments comes with its payload: the items without one (~90% of a long
    # context) are passed over in C, the rest (tool calls and results, mostly) looked at here.
    for item_id, kind, _text, raw in compress(context.items, map(_payload_of, context.items)):
        if kind != _USER or raw is None:
            continue
        refs = attachment_refs(_decoder.decode(raw))
        if refs:
            found[item_id] = read_attachments(store, refs)
    return found
