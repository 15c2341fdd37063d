"""What the SDK-based adapters (OpenAI-compatible, Anthropic) share: their identity and base URL, the
checks made before any call (a missing key, images for a model that reads text only), closing the client."""

from __future__ import annotations

from typing import Any

from anyy.domain.model_io import ModelRequest, image_count, last_user_images, refuse_images, without_images
from anyy.providers.base import ProviderError
from anyy.providers.http_errors import missing_key

NO_KEY = "no-key"  # an explicit key also stops an SDK from looking for credentials elsewhere


class SdkProvider:
    name: str
    images: bool
    base_url: str
    _client: Any

    def _configure(
        self, name: str, base_url: str, *, api_key: str, key_env: str, key_required: bool, images: bool
    ) -> None:
        self.name = name
        self.images = images  # whether its models read images (N5)
        self.base_url = base_url.rstrip("/")
        self._key_env = key_env
        self._key_missing = key_required and not api_key

    def _check(self, request: ModelRequest) -> ModelRequest:
        """Refuse before any call: no key, or images in the message to answer for a model that reads text
        only; the images of earlier messages become a note for such a model (one image never fails every
        later turn, U5). The request to send."""
        if self._key_missing:
            raise missing_key(self.name, self._key_env)
        if not self.images and image_count(request):
            if last_user_images(request):
                hint = f"If they do, set images = true in [providers.{self.name}] of config.toml."
                raise ProviderError("fatal", refuse_images(self.name, request.model, hint))
            return without_images(request, self.name)
        return request

    async def aclose(self) -> None:
        await self._client.close()
