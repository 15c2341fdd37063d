"""Model providers behind one protocol: offline, OpenAI-compatible, Anthropic. SDKs load only when used.

``ModelRegistry`` builds providers from a profile's settings; ``OfflineProvider`` is the deterministic
model (and the scriptable one for tests). The adapters ``openai_compat`` and ``anthropic_messages`` are
imported by the registry on first use, never from here.
"""

from anyy.providers.base import Provider, ProviderError
from anyy.providers.gates import Flag, Gate
from anyy.providers.offline import OfflineProvider
from anyy.providers.registry import (
    VIRTUAL_PROVIDER,
    AliasInfo,
    ModelRegistry,
    ProviderConfig,
    ProviderInfo,
    Resolution,
    UnknownModel,
)

__all__ = [
    "VIRTUAL_PROVIDER",
    "AliasInfo",
    "Flag",
    "Gate",
    "ModelRegistry",
    "OfflineProvider",
    "Provider",
    "ProviderConfig",
    "ProviderError",
    "ProviderInfo",
    "Resolution",
    "UnknownModel",
]
