"""The model registry: providers built from a profile's settings on first use, and the model names they offer.

A session selects a *provider* and a *model*. The provider is a configured one (``[providers.NAME]`` or a
built-in); the model is one of its names, or, with the provider ``"alias"``, a *virtual* model: a name in
``[aliases]`` that stands for a ``provider/model`` pair. :meth:`ModelRegistry.resolve` turns a selection
into the physical pair to call, and applies SPEC M2: a session whose alias has since been removed goes on
with the model of its last physical response.

Nothing here imports an SDK on the caller's thread. A provider is built the first time it is asked for,
and only then is its adapter module (and so ``openai`` or ``anthropic``) imported: start-up stays fast and
a profile that never uses a provider needs none of its packages. The import takes 1-5 s on a busy machine,
so it never runs on the event loop: :meth:`ModelRegistry.provider` builds in a worker thread, and the
Gateway warms the providers its profile names at start (:meth:`ModelRegistry.warm`) in a thread of their
own, so that the first model call usually finds them ready.

The settings are taken as plain values (anything with ``kind``, ``base_url``, ``api_key_env`` and
``models``, such as ``anyy.profiles.config.ProviderSettings``): providers and profiles are sibling layers.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Protocol

import msgspec

from anyy.domain.errors import InvalidInput
from anyy.providers.base import Provider, ProviderError

log = logging.getLogger("anyy.providers")
VIRTUAL_PROVIDER = "alias"  # the same word as anyy.profiles.config.VIRTUAL_PROVIDER (a test checks)

_PACKAGES = {"openai": "openai", "anthropic": "anthropic"}


class ProviderConfig(Protocol):
    """What the registry reads of one provider's settings."""

    @property
    def kind(self) -> str: ...

    @property
    def base_url(self) -> str: ...

    @property
    def api_key_env(self) -> str: ...

    @property
    def models(self) -> Sequence[str]: ...


# Builds a provider of one kind from (its name, its settings, its API key): imports its adapter module (and
# SDK) when called. Called on a worker thread, never on the event loop.
Loader = Callable[[str, ProviderConfig, str], Provider]


def _load_offline(name: str, settings: ProviderConfig, api_key: str) -> Provider:
    from anyy.providers.offline import OfflineProvider

    return OfflineProvider(name)


def _load_openai(name: str, settings: ProviderConfig, api_key: str) -> Provider:
    from anyy.providers.openai_compat import OpenAICompatProvider

    return OpenAICompatProvider(
        name,
        base_url=settings.base_url or "https://api.openai.com/v1",
        api_key=api_key,
        key_env=settings.api_key_env,
        key_required=bool(settings.api_key_env),
        images=getattr(settings, "images", True),
    )


def _load_anthropic(name: str, settings: ProviderConfig, api_key: str) -> Provider:
    from anyy.providers.anthropic_messages import AnthropicProvider

    return AnthropicProvider(
        name,
        base_url=settings.base_url or "https://api.anthropic.com",
        api_key=api_key,
        key_env=settings.api_key_env,
        key_required=bool(settings.api_key_env),
        images=getattr(settings, "images", True),
    )


LOADERS: Mapping[str, Loader] = {"offline": _load_offline, "openai": _load_openai, "anthropic": _load_anthropic}


class UnknownModel(InvalidInput):
    """A selection that names a provider, model or alias that does not exist; the message lists what does."""


class ProviderInfo(msgspec.Struct, kw_only=True, frozen=True):
    """One provider as a selector shows it. ``models`` empty: any model name is accepted."""

    name: str
    kind: str
    base_url: str
    models: tuple[str, ...]
    images: bool = True  # whether its models read images (U5: clients refuse an image at attach time)


class AliasInfo(msgspec.Struct, kw_only=True, frozen=True):
    name: str
    provider: str
    model: str


class Resolution(msgspec.Struct, kw_only=True, frozen=True):
    """What a selection means now. ``fallback``: the alias is gone and the last response's model is used;
    ``note`` then says so in words for the session's history."""

    provider: str
    model: str
    virtual: bool = False
    fallback: bool = False
    note: str = ""


class ModelRegistry:
    """Providers by name, built lazily; model names; the M2 resolution of a session's selection.

    ``instances`` replaces the provider of a name by a ready-made one (tests pass a scripted
    OfflineProvider); ``environ`` is where API keys are read (default: ``os.environ``); ``loaders``
    replaces or adds the :data:`Loader` of a kind (a test holds one to show the loop is never held).
    """

    def __init__(
        self,
        providers: Mapping[str, ProviderConfig],
        aliases: Mapping[str, str] | None = None,
        *,
        instances: Mapping[str, Provider] | None = None,
        environ: Mapping[str, str] | None = None,
        loaders: Mapping[str, Loader] | None = None,
    ) -> None:
        self._settings = dict(providers)
        self._instances: dict[str, Provider] = dict(instances or {})
        self._loaders = {**LOADERS, **(loaders or {})}
        self._building = threading.Lock()  # guards _locks
        self._locks: dict[str, threading.Lock] = {}  # one build per provider, whichever thread asks first
        self._environ = environ if environ is not None else os.environ
        self._aliases: dict[str, tuple[str, str]] = {}
        for alias, target in (aliases or {}).items():
            provider, _, model = target.partition("/")
            self._aliases[alias] = (provider, model)

    # -- what exists -------------------------------------------------------------------------------
    def provider_names(self) -> list[str]:
        return sorted({*self._settings, *self._instances})

    def models(self, provider: str) -> list[str]:
        """The model names a provider offers; empty when it accepts any."""
        if provider == VIRTUAL_PROVIDER:
            return sorted(self._aliases)
        self._require_provider(provider)
        settings = self._settings.get(provider)
        return list(settings.models) if settings is not None else []

    def catalog(self) -> list[ProviderInfo]:
        """Every provider with its models, for a model selector."""
        infos: list[ProviderInfo] = []
        for name in self.provider_names():
            settings = self._settings.get(name)
            kind = settings.kind if settings is not None else "custom"  # given as a ready-made instance
            infos.append(
                ProviderInfo(
                    name=name,
                    kind=kind,
                    base_url=settings.base_url if settings is not None else "",
                    models=tuple(settings.models) if settings is not None else (),
                    images=self.reads_images(name),
                )
            )
        return infos

    def reads_images(self, provider: str) -> bool:
        """Whether a provider's models read images (N5): the offline model never does, an SDK provider unless
        its settings say ``images = false``."""
        if provider == VIRTUAL_PROVIDER:
            return True  # an alias: its target decides (resolved at the call)
        instance = self._instances.get(provider)
        if instance is not None:
            return bool(getattr(instance, "images", False))
        settings = self._settings.get(provider)
        if settings is None:
            return True
        return settings.kind != "offline" and bool(getattr(settings, "images", True))

    def aliases(self) -> list[AliasInfo]:
        return [AliasInfo(name=n, provider=p, model=m) for n, (p, m) in sorted(self._aliases.items())]

    # -- resolution ---------------------------------------------------------------------------------
    def resolve(self, provider: str, model: str, last_physical: tuple[str, str] | None) -> tuple[str, str]:
        """The physical (provider, model) to call for a session's selection; see :meth:`resolution`."""
        found = self.resolution(provider, model, last_physical)
        return found.provider, found.model

    def resolution(self, provider: str, model: str, last_physical: tuple[str, str] | None = None) -> Resolution:
        """What the selection (provider, model) calls now.

        A virtual model that is no longer registered falls back to ``last_physical``, the provider and
        model of the session's last response (SPEC M2); with no such response it is an error. A physical
        selection must name a known provider and, when that provider lists its models, one of them.
        Raises :class:`UnknownModel` with a message that lists what exists.
        """
        if provider == VIRTUAL_PROVIDER:
            target = self._aliases.get(model)
            if target is not None:
                self._check_physical(*target, via=model)
                return Resolution(provider=target[0], model=target[1], virtual=True)
            if last_physical is not None:
                self._check_physical(*last_physical)
                return Resolution(
                    provider=last_physical[0],
                    model=last_physical[1],
                    virtual=True,
                    fallback=True,
                    note=(
                        f"the virtual model {model!r} is no longer registered: going on with "
                        f"{last_physical[0]}/{last_physical[1]}, the model of the last response"
                    ),
                )
            known = ", ".join(sorted(self._aliases)) or "none are defined"
            raise UnknownModel(
                f"the virtual model {model!r} is not registered (aliases: {known}): choose a model with "
                "/model, or add it to [aliases] in config.toml"
            )
        self._check_physical(provider, model)
        return Resolution(provider=provider, model=model)

    def _check_physical(self, provider: str, model: str, *, via: str = "") -> None:
        origin = f" (the alias {via!r} points there)" if via else ""
        self._require_provider(provider, origin)
        settings = self._settings.get(provider)
        offered = list(settings.models) if settings is not None else []
        if not model or (offered and model not in offered):
            listed = f"its models are: {', '.join(offered)}" if offered else "name one with /model"
            raise UnknownModel(f"unknown model {model!r} for the provider {provider!r}{origin}; {listed}")

    def _require_provider(self, provider: str, origin: str = "") -> None:
        if provider not in self._settings and provider not in self._instances:
            names = ", ".join([*self.provider_names(), VIRTUAL_PROVIDER])
            raise UnknownModel(
                f"unknown provider {provider!r}{origin}; the providers are: {names} "
                "(add a [providers.NAME] table to config.toml for another one)"
            )

    # -- providers ----------------------------------------------------------------------------------
    async def provider(self, name: str) -> Provider:
        """The provider of that name, built on first use in a worker thread (its import never holds the
        event loop). Raises ProviderError (fatal) when its package is not installed, UnknownModel when no
        such provider is configured."""
        found = self._instances.get(name)
        if found is not None:
            return found
        self._require_provider(name)
        return await asyncio.to_thread(self._built, name)

    def warm(self, names: Iterable[str]) -> threading.Thread:
        """Build these providers (import their SDKs) in a background thread, now; a failure is left for
        the first use to report. Returns the thread (a caller may join it)."""
        wanted = [n for n in dict.fromkeys(names) if n in self._settings and n not in self._instances]

        def build_all() -> None:
            for name in wanted:
                try:
                    self._built(name)
                except Exception as error:  # said again, to the session, at first use
                    log.info("provider %s not warmed: %s", name, error)

        thread = threading.Thread(target=build_all, name="anyy-warm-providers", daemon=True)
        thread.start()
        return thread

    async def aclose(self) -> None:
        """Close every provider built so far (their HTTP connections)."""
        instances, self._instances = list(self._instances.values()), {}
        for instance in instances:
            await instance.aclose()

    def _built(self, name: str) -> Provider:
        """The provider, built once whichever thread asks first (on a worker thread: it imports)."""
        with self._building:
            lock = self._locks.setdefault(name, threading.Lock())
        with lock:
            found = self._instances.get(name)
            if found is None:
                found = self._build(name, self._settings[name])
                # A new dict, never one changed in place: the loop may be reading the old one meanwhile.
                self._instances = {**self._instances, name: found}
            return found

    def _build(self, name: str, settings: ProviderConfig) -> Provider:
        key_env = settings.api_key_env
        api_key = self._environ.get(key_env, "") if key_env else ""
        loader = self._loaders.get(settings.kind)
        if loader is None:
            raise ProviderError("fatal", f"the provider {name!r} has an unknown kind {settings.kind!r}")
        try:
            return loader(name, settings, api_key)
        except ModuleNotFoundError as exc:
            # The SDK, or one of the packages it needs (httpx2 for both), is missing: always say which
            # extra brings them back, whichever module failed first.
            package = _PACKAGES.get(settings.kind, settings.kind)
            missing = f"the {exc.name!r} package" if exc.name else "a package"
            raise ProviderError(
                "fatal",
                f"the provider {name!r} ({settings.kind}) cannot load: {missing} is not installed; "
                f"reinstall anyy with its SDKs: pip install 'anyy[{package}]' (or bash scripts/install)",
            ) from exc
