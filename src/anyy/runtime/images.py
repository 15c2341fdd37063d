"""Image attachments of the context's user messages, for the model request (SPEC N5).

A stored context carries the payload of a user entry that has attachments (``carries_payload``), so which
of them are images is read from the context itself, with no lookup per entry; the image bytes are read
from the profile's objects when a context's messages are built (the runtime keeps them with the session's
messages, see ``anyy.runtime.contexts``).
"""

from __future__ import annotations

import operator
from itertools import compress
from typing import Any

import msgspec

from anyy.domain.context import ModelContext
from anyy.domain.entries import EntryKind
from anyy.domain.model_io import ImagePart
from anyy.storage.protocol import SessionStore

ImageRef = tuple[str, str, str]  # object, media type, name
_decoder = msgspec.json.Decoder(dict[str, Any])
_USER = int(EntryKind.USER)
_payload_of = operator.itemgetter(3)


def image_refs(data: dict[str, Any]) -> tuple[ImageRef, ...]:
    """The image attachments named by a user entry's payload."""
    attachments = data.get("attachments") or []
    return tuple(
        (str(a.get("object", "")), str(a.get("media_type", "")), str(a.get("name", "")))
        for a in attachments
        if isinstance(a, dict) and str(a.get("media_type", "")).startswith("image/")
    )


def read_images(store: SessionStore, refs: tuple[ImageRef, ...]) -> tuple[ImagePart, ...]:
    return tuple(
        ImagePart(media_type=media_type, data=store.read_object(obj), name=name) for obj, media_type, name in refs
    )


def context_images(store: SessionStore, session_id: str, context: ModelContext) -> dict[int, tuple[ImagePart, ...]]:
    """The image attachments of every user entry of ``context``, by entry id (run on the store thread)."""
    images: dict[int, tuple[ImagePart, ...]] = {}
    # Only a user message with attachments comes with its payload: the items without one (~90% of a long
    # context) are passed over in C, the rest (tool calls and results, mostly) looked at here.
    for item_id, kind, _text, raw in compress(context.items, map(_payload_of, context.items)):
        if kind != _USER or raw is None:
            continue
        refs = image_refs(_decoder.decode(raw))
        if refs:
            images[item_id] = read_images(store, refs)
    return images
