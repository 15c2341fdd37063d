"""What a session's model can take, checked when a message is sent (U5): an image for a model that reads
text only is refused there, with the reason and what to do, before it is stored in the session, where it
would fail the turn. Every client (CLI, TUI, Dashboard) meets the same refusal; they also warn at attach
time from ``models.list`` (each provider's ``images``)."""

from __future__ import annotations

from collections.abc import Sequence

from anyy.domain.entries import Attachment
from anyy.domain.errors import InvalidInput
from anyy.providers.registry import ModelRegistry


def refuse_unreadable(models: object, provider: str, model: str, attachments: Sequence[Attachment]) -> None:
    """Raise InvalidInput when ``attachments`` hold an image and the selection (provider, model) reads text only."""
    images = [a.name for a in attachments if a.media_type.startswith("image/")]
    if not images or not isinstance(models, ModelRegistry):
        return
    try:
        physical, name = models.resolve(provider, model, None)
    except InvalidInput:
        return  # an alias gone, an unknown model: the turn says so, with what to choose
    if models.reads_images(physical):
        return
    listed = ", ".join(images[:5]) + (" …" if len(images) > 5 else "")
    raise InvalidInput(
        f"the model {physical}/{name} reads text only and cannot take the image {listed}: nothing was sent. "
        "Remove the image, or switch to a model that reads images (/model) and send again."
    )
