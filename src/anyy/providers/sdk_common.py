"""What the SDK-based adapters (OpenAI-compatible, Anthropic) share: their identity and base URL, the
checks made before any call (a missing key, images for a model that reads text only), closing the client."""

from __future__ import annotations

from typing import Any

from anyy.domain.model_io import ModelRequest, image_count, refuse_images
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

    def _check(self, request: ModelRequest) -> None:
        """Refuse before any call: no key, or images for a model that reads text only."""
        if self._key_missing:
            raise missing_key(self.name, self._key_env)
        if not self.images and image_count(request):
            hint = f"If they do, set images = true in [providers.{self.name}] of config.toml."
            raise ProviderError("fatal", refuse_images(self.name, request.model, hint))

    async def aclose(self) -> None:
        await self._client.close()
