"""The text a model reads of an attached file that is not an image (U5).

What a file is is told by its content, not only its name or claimed media type: a PDF by its signature,
text by decoding (UTF-8, or UTF-16 with a byte-order mark) without control bytes. A PDF is read with pypdf
(imported only when a PDF is attached), page by page with page markers. Every file is cut to
``MAX_FILE_CHARS`` with a note saying so; a file that is neither, or that cannot be read, is named to the
model with the reason, so that it never answers as if it had read it.

Extraction is kept per stored object (objects are named by their hash), so a long PDF is read once per
process, not at every rebuild of a session's context.
"""

from __future__ import annotations

import io
import logging
import threading
from collections import OrderedDict

from anyy.domain.model_io import FilePart

log = logging.getLogger(__name__)

MAX_FILE_CHARS = 100_000  # ~25k tokens: a log or a source file whole, a book cut
MAX_PDF_PAGES = 500
_SNIFF = 8192
_CACHE_ENTRIES = 64
_cache: OrderedDict[str, tuple[str, str, str]] = OrderedDict()  # object → (kind, text, note)
_lock = threading.Lock()

# Bytes that do not occur in text (tab, newlines, form feed and escape do).
_CONTROL = frozenset(range(0, 32)) - {9, 10, 12, 13, 27}


def file_part(object_hash: str, data: bytes, name: str, media_type: str) -> FilePart:
    """The model's view of one attached file (``data`` its stored bytes)."""
    with _lock:
        found = _cache.get(object_hash) if object_hash else None
        if found is not None:
            _cache.move_to_end(object_hash)
    if found is None:
        found = _extract(data, media_type)
        if object_hash:
            with _lock:
                _cache[object_hash] = found
                while len(_cache) > _CACHE_ENTRIES:
                    _cache.popitem(last=False)
    kind, text, note = found
    return FilePart(name=name, kind=kind, text=text, note=note, size=len(data))


def _extract(data: bytes, media_type: str) -> tuple[str, str, str]:
    if data.startswith(b"%PDF-") or (media_type == "application/pdf" and b"%PDF-" in data[:1024]):
        return _pdf(data)
    text = decode_text(data)
    if text is None:
        what = media_type if media_type and media_type != "application/octet-stream" else "binary data"
        return "other", "", f"This file is {what}, not text, a PDF or an image: its content is not shown."
    return ("text", *_cut(text))


def decode_text(data: bytes) -> str | None:
    """``data`` as text, or None when it is not text (control bytes, not UTF-8 nor UTF-16 with a BOM)."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            return data.decode("utf-16")
        except UnicodeDecodeError:
            return None
    head = data[:_SNIFF]
    if any(byte in _CONTROL for byte in head):
        return None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        # A file cut inside a character at its very end is still text; anything else is not UTF-8.
        if exc.start < len(data) - 3:
            return None
        return data[: exc.start].decode("utf-8-sig")


def _cut(text: str) -> tuple[str, str]:
    if len(text) <= MAX_FILE_CHARS:
        return text, ""
    return text[:MAX_FILE_CHARS], (
        f"The file was cut: only its first {MAX_FILE_CHARS} of {len(text)} characters are shown above."
    )


def _pdf(data: bytes) -> tuple[str, str, str]:
    try:
        from pypdf import PdfReader
        from pypdf.errors import PyPdfError

        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            return "other", "", "This PDF is encrypted with a password: its text could not be read."
        pages: list[str] = []
        size = 0
        total = len(reader.pages)
        for number, page in enumerate(reader.pages[:MAX_PDF_PAGES], start=1):
            pages.append(f"--- page {number} of {total} ---\n{(page.extract_text() or '').strip()}")
            size += len(pages[-1])
            if size > MAX_FILE_CHARS:
                break
    except (PyPdfError, ValueError, KeyError, TypeError, AttributeError, IndexError, RecursionError) as exc:
        log.info("a PDF attachment could not be read: %s", exc)
        return "other", "", f"This PDF could not be read ({type(exc).__name__}): its text is not shown."
    text, note = _cut("\n\n".join(pages))
    shown = len(pages)
    if not note and shown < total:
        note = f"Only the first {shown} of {total} pages are shown."
    elif note:
        note = f"The PDF has {total} pages; its text was cut after {MAX_FILE_CHARS} characters."
    if not text.replace("-", "").strip() or all(not p.split("\n", 1)[1].strip() for p in pages):
        note = (note + " " if note else "") + "No text was found in it (a scan?): the pages may be images."
    return "pdf", text, note
