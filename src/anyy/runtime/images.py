"""Image attachments of the context's user messages, for the model request (SPEC N5).

The stored context carries no payload for user entries, so each user entry is looked at once (entries
never change) and which of its attachments are images is remembered; the image bytes are read from the
profile's objects when a context's messages are built (the runtime keeps them with the session's
messages, see ``anyy.runtime.contexts``).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from anyy.domain.context import ModelContext
from anyy.domain.entries import EntryKind
from anyy.domain.model_io import ImagePart
from anyy.storage.protocol import SessionStore

ImageRef = tuple[str, str, str]  # object, media type, name
# (session id, entry id) -> the entry's image attachments; the most recently used kept (D13: it grew with
# every user message the Gateway ever sent to a model). Most are looked up once per context built: the
# kept contexts (``anyy.runtime.contexts``) hold their images themselves.
SEEN_MAX = 4096
_seen: OrderedDict[tuple[str, int], tuple[ImageRef, ...]] = OrderedDict()


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
    for item in context.items:
        if item[1] != EntryKind.USER:
            continue
        refs = _refs(store, session_id, item[0])
        if refs:
            images[item[0]] = read_images(store, refs)
    return images


def _refs(store: SessionStore, session_id: str, entry_id: int) -> tuple[ImageRef, ...]:
    key = (session_id, entry_id)
    refs = _seen.get(key)
    if refs is None:
        refs = _seen[key] = image_refs(store.get_entry(session_id, entry_id).data)
        if len(_seen) > SEEN_MAX:
            _seen.popitem(last=False)
    else:
        _seen.move_to_end(key)
    return refs


def remembered() -> int:
    """User entries whose image attachments are remembered (bounded by ``SEEN_MAX``)."""
    return len(_seen)
