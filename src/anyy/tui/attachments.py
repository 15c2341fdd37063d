"""Files attached to the next message (SPEC Q2, N5): ``/attach PATH`` uploads the file to the Gateway's
``/upload`` route at once (stored once in the profile by its hash) and lists it above the editor;
``/detach N`` (or ``/detach`` for all) removes it. The next message sent carries them, and they are kept
if the send fails. A path is read relative to the directory ``anyy`` was started in (``~`` works)."""

from __future__ import annotations

import asyncio
import json
import mimetypes
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import msgspec
from textual.widgets import Static

from anyy.api.entries import Attachment
from anyy.profiles.gateway_address import Address
from anyy.tui.state import SessionState

UPLOAD_LIMIT = 32 * 1024 * 1024  # the Gateway's own limit (docs/api.md): said before anything is sent
UPLOAD_TIMEOUT = 60.0


class AttachError(Exception):
    """Why a file was not attached, in words for the user."""


def size_text(size: int) -> str:
    if size < 1024:
        return f"{size} B"
    if size < 1024 * 1024:
        return f"{size / 1024:.1f} kB"
    return f"{size / 1024 / 1024:.1f} MB"


def read_file(argument: str, cwd: Path | None = None) -> tuple[str, bytes, str]:
    """The file named by ``/attach``'s argument: its name, content and media type."""
    if not argument.strip():
        raise AttachError("/attach needs a file: /attach PATH")
    path = Path(argument.strip().strip("'\"")).expanduser()
    if not path.is_absolute():
        path = (cwd or Path.cwd()) / path
    if not path.is_file():
        raise AttachError(f"no file {str(path)!r}: give the path of a file (relative to {cwd or Path.cwd()})")
    size = path.stat().st_size
    if size > UPLOAD_LIMIT:
        raise AttachError(f"{path.name} is {size_text(size)}: the Gateway takes files up to {size_text(UPLOAD_LIMIT)}")
    media_type = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
    return path.name, path.read_bytes(), media_type


def _post(address: Address, name: str, data: bytes, media_type: str) -> Attachment:
    url = f"{address.url}/upload?name={urllib.parse.quote(name)}"
    request = urllib.request.Request(  # noqa: S310 - the Gateway's own loopback address
        url,
        data=data,
        method="POST",
        headers={"Authorization": f"Bearer {address.token}", "Content-Type": media_type},
    )
    try:
        with urllib.request.urlopen(request, timeout=UPLOAD_TIMEOUT, context=address.ssl_context()) as reply:  # noqa: S310
            return msgspec.json.decode(reply.read(), type=Attachment)
    except urllib.error.HTTPError as exc:
        try:
            why = str(json.loads(exc.read()).get("error", exc.reason))
        except ValueError:
            why = str(exc.reason)
        raise AttachError(f"the Gateway refused {name}: {why}") from None
    except (urllib.error.URLError, OSError) as exc:
        raise AttachError(f"{name} could not be uploaded: {exc}") from None


async def upload(address: Address, argument: str, cwd: Path | None = None, *, text_only: str = "") -> Attachment:
    """Read and upload the file (in a thread: the app goes on drawing); AttachError says why not.
    ``text_only`` names the session's model when it reads text only: an image is refused then (U5)."""
    name, data, media_type = read_file(argument, cwd)
    if text_only and media_type.startswith("image/"):
        raise AttachError(
            f"{name} was not attached: the model {text_only} reads text only and cannot take images. "
            "Switch to a model that reads images (/model) and attach it again."
        )
    return await asyncio.to_thread(_post, address, name, data, media_type)


class AttachmentsBar(Static):
    """The files that go with the next message, above the editor."""

    DEFAULT_CSS = """
    AttachmentsBar { height: auto; max-height: 6; color: $text; padding: 0 1; display: none; }
    AttachmentsBar.has-files { display: block; }
    """

    def __init__(self, state: SessionState) -> None:
        super().__init__("", id="attachments", markup=False)
        self.files: list[Attachment] = []
        state.watch("attachments", self.show)

    def show(self, files: list[Attachment]) -> None:
        self.files = files
        lines = [f"📎 {number}. {item.name} ({size_text(item.size)})" for number, item in enumerate(files, 1)]
        if files:
            lines.append("sent with the next message · /detach N removes one, /detach all of them")
        self.update("\n".join(lines))
        self.set_class(bool(files), "has-files")
