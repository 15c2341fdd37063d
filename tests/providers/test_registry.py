"""The model registry: lazy providers, what exists, virtual models and the M2 fallback."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
import threading
from collections.abc import Mapping
from pathlib import Path

import pytest

from anyy.domain.errors import InvalidInput
from anyy.domain.model_io import UserMessage
from anyy.profiles.config import VIRTUAL_PROVIDER as CONFIG_VIRTUAL_PROVIDER
from anyy.profiles.config import Config, ModelSettings, ProviderSettings, load_config
from anyy.providers import VIRTUAL_PROVIDER, ModelRegistry, OfflineProvider, Provider, ProviderError, UnknownModel
from anyy.providers.registry import LOADERS, Loader
from tests.fakes.model_server import FakeModelServer, Reply
from tests.providers.support import collect, request, run, text_of

ROOT = Path(__file__).resolve().parents[2]


def registry_from(
    config: Config, *, instances: Mapping[str, Provider] | None = None, environ: Mapping[str, str] | None = None
) -> ModelRegistry:
    """How the runtime builds it: plain settings, since providers may not import profiles."""
    providers = {name: config.provider(name) for name in config.provider_names()}
    return ModelRegistry(providers, config.aliases, instances=instances, environ=environ)


def sample_config() -> Config:
    return Config(
        model=ModelSettings(provider="local", model="llama3"),
        providers={
            "local": ProviderSettings(kind="openai", base_url="http://127.0.0.1:9/v1", models=["llama3", "qwen"]),
            "any": ProviderSettings(kind="openai", base_url="http://127.0.0.1:9/v1"),
        },
        aliases={"fast": "local/qwen", "smart": "anthropic/claude-x"},
    )


def _python(script: str) -> subprocess.CompletedProcess[str]:
    """Run a script in a fresh interpreter with a bare environment (an OpenAI key set)."""
    return subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={"PATH": "/usr/bin:/bin", "OPENAI_API_KEY": "sk-x"},
        check=False,
        timeout=60,
    )


def test_m5_import_and_offline_use_load_no_sdk() -> None:
    """The SDKs are imported when a provider of their kind is first built, never before."""
    script = textwrap.dedent(
        """
        import asyncio, sys
        import anyy.providers
        from anyy.providers.registry import ModelRegistry
        from anyy.profiles.config import Config
        from anyy.domain.model_io import ModelRequest, UserMessage

        config = Config()
        registry = ModelRegistry({n: config.provider(n) for n in config.provider_names()}, {})
        assert registry.provider_names() == ["anthropic", "offline", "openai"]

        async def use_offline():
            async for _ in (await registry.provider("offline")).stream(
                ModelRequest(model="offline", system="", messages=(UserMessage(text="hi"),))
            ):
                pass

        asyncio.run(use_offline())
        loaded = lambda: sorted(m for m in ("openai", "anthropic", "httpx2") if m in sys.modules)
        print("offline:", loaded())
        asyncio.run(registry.provider("openai"))
        print("openai:", loaded())
        asyncio.run(registry.provider("anthropic"))
        print("anthropic:", loaded())
        """
    )
    done = _python(script)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "offline: []",
        "openai: ['httpx2', 'openai']",
        "anthropic: ['anthropic', 'httpx2', 'openai']",
    ]


def test_m5_registry_lists_providers_and_models() -> None:
    registry = registry_from(sample_config())
    assert registry.provider_names() == ["anthropic", "any", "local", "offline", "openai"]
    assert registry.models("local") == ["llama3", "qwen"]
    assert registry.models("offline") == ["offline"]
    assert registry.models("any") == []  # any model name is accepted
    assert registry.models(VIRTUAL_PROVIDER) == ["fast", "smart"]
    catalog = {info.name: info for info in registry.catalog()}
    assert catalog["local"].kind == "openai"
    assert catalog["local"].models == ("llama3", "qwen")
    assert catalog["anthropic"].base_url == "https://api.anthropic.com"
    assert [(a.name, a.provider, a.model) for a in registry.aliases()] == [
        ("fast", "local", "qwen"),
        ("smart", "anthropic", "claude-x"),
    ]


def test_m5_registry_resolves_a_physical_selection() -> None:
    registry = registry_from(sample_config())
    assert registry.resolve("local", "qwen", None) == ("local", "qwen")
    assert registry.resolve("any", "whatever:7b", None) == ("any", "whatever:7b")


def test_m5_unknown_provider_lists_the_providers() -> None:
    registry = registry_from(sample_config())
    with pytest.raises(UnknownModel) as caught:
        registry.resolve("nowhere", "x", None)
    message = str(caught.value)
    assert "unknown provider 'nowhere'" in message
    assert "anthropic, any, local, offline, openai, alias" in message
    assert isinstance(caught.value, InvalidInput)


def test_m5_unknown_model_lists_the_models() -> None:
    registry = registry_from(sample_config())
    with pytest.raises(
        UnknownModel, match=r"unknown model 'gpt' for the provider 'local'; its models are: llama3, qwen"
    ):
        registry.resolve("local", "gpt", None)
    with pytest.raises(UnknownModel, match="unknown model '' for the provider 'any'"):
        registry.resolve("any", "", None)


def test_m2_alias_resolves_to_its_target() -> None:
    registry = registry_from(sample_config())
    assert registry.resolve(VIRTUAL_PROVIDER, "fast", ("offline", "offline")) == ("local", "qwen")
    found = registry.resolution(VIRTUAL_PROVIDER, "fast")
    assert (found.virtual, found.fallback) == (True, False)


def test_m2_missing_virtual_model_falls_back_to_last_physical() -> None:
    registry = registry_from(sample_config())
    assert registry.resolve(VIRTUAL_PROVIDER, "removed", ("local", "llama3")) == ("local", "llama3")
    found = registry.resolution(VIRTUAL_PROVIDER, "removed", ("local", "llama3"))
    assert found.fallback
    assert "'removed' is no longer registered" in found.note
    assert "local/llama3" in found.note


def test_m2_missing_virtual_model_without_a_last_response_lists_the_aliases() -> None:
    registry = registry_from(sample_config())
    with pytest.raises(UnknownModel, match=r"virtual model 'removed' is not registered \(aliases: fast, smart\)"):
        registry.resolve(VIRTUAL_PROVIDER, "removed", None)


def test_m2_alias_to_a_provider_that_is_gone_says_so() -> None:
    registry = ModelRegistry({"offline": ProviderSettings(kind="offline")}, {"old": "gone/model"})
    with pytest.raises(UnknownModel, match="unknown provider 'gone' \\(the alias 'old' points there\\)"):
        registry.resolve(VIRTUAL_PROVIDER, "old", None)


async def test_m5_registry_builds_each_provider_once_and_uses_given_instances() -> None:
    scripted = OfflineProvider("offline", scripted_only=True)
    registry = registry_from(Config(), instances={"offline": scripted})
    assert await registry.provider("offline") is scripted
    first = await registry.provider("openai")
    assert await registry.provider("openai") is first
    await run(registry.aclose())


async def test_m5_registry_provider_of_unknown_name_is_unknown_model() -> None:
    with pytest.raises(UnknownModel, match="unknown provider 'x'"):
        await registry_from(Config()).provider("x")


async def test_m5_registry_missing_key_is_a_fatal_error_naming_the_variable() -> None:
    registry = registry_from(Config(), environ={})
    provider = await registry.provider("anthropic")
    with pytest.raises(ProviderError, match=r"\$ANTHROPIC_API_KEY is not set") as caught:
        await run(collect(provider, request()))
    assert caught.value.kind == "fatal"
    await run(registry.aclose())


async def test_m5_registry_provider_talks_to_the_configured_server(fake: FakeModelServer) -> None:
    config = Config(providers={"local": ProviderSettings(kind="openai", base_url=fake.openai_url)})
    fake.enqueue(Reply(text=["from ", "the server"]))

    async def scenario() -> str:
        registry = registry_from(config, environ={})
        try:
            provider, model = registry.resolve("local", "llama3", None)
            return text_of(
                await collect(await registry.provider(provider), request(UserMessage(text="hi"), model=model))
            )
        finally:
            await registry.aclose()

    assert await run(scenario()) == "from the server"
    assert fake.received[0].headers["authorization"] == "Bearer no-key"


async def test_m5_registry_offline_default_answers() -> None:
    registry = registry_from(Config())
    provider, model = registry.resolve(Config().model.provider, Config().model.model, None)
    text = text_of(await run(collect(await registry.provider(provider), request(model=model))))
    assert text.startswith("(offline model)")


def test_m2_virtual_provider_word_is_the_same_in_config_and_registry() -> None:
    assert VIRTUAL_PROVIDER == CONFIG_VIRTUAL_PROVIDER


# -- the [aliases] table and models lists in config.toml ---------------------------------------------
def write_config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_m2_config_aliases_are_read(tmp_path: Path) -> None:
    path = write_config(
        tmp_path,
        '[model]\nprovider = "alias"\nmodel = "fast"\n'
        '[providers.local]\nkind = "openai"\nmodels = ["a", "b"]\n'
        '[aliases]\nfast = "local/a"\nrouted = "openai/openrouter/x"\n',
    )
    config = load_config(path)
    assert config.aliases == {"fast": "local/a", "routed": "openai/openrouter/x"}
    assert config.provider("local").models == ["a", "b"]
    assert registry_from(config).resolve("alias", "routed", None) == ("openai", "openrouter/x")


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ('[aliases]\nfast = "no-slash"\n', r"alias 'fast' in \[aliases\] must be \"provider/model\""),
        ('[aliases]\nfast = "nowhere/x"\n', r"alias 'fast' in \[aliases\] names the provider 'nowhere'"),
        ('[aliases]\n"Big One" = "openai/x"\n', r"invalid alias name 'Big One'"),
        ('[providers.alias]\nkind = "openai"\n', r"\[providers\.alias\] is reserved"),
        ('[model]\nprovider = "alias"\nmodel = "gone"\n', r"selects the alias 'gone', which \[aliases\] does not"),
    ],
)
def test_m2_config_bad_aliases_are_refused(tmp_path: Path, text: str, error: str) -> None:
    with pytest.raises(InvalidInput, match=error):
        load_config(write_config(tmp_path, text))


def test_m2_default_config_documents_aliases_and_model_lists() -> None:
    from anyy.profiles.config import DEFAULT_CONFIG_TOML

    assert "[aliases]" in DEFAULT_CONFIG_TOML
    assert "# models = [" in DEFAULT_CONFIG_TOML


def test_m5_a_missing_sdk_dependency_names_the_extra() -> None:
    """Whichever module fails first (the SDK, or httpx2 under it), the error names the extra to install,
    never a bare ModuleNotFoundError."""
    script = textwrap.dedent(
        """
        import asyncio, sys
        sys.modules["httpx2"] = None  # as if the SDKs' HTTP package were not installed
        from anyy.providers.base import ProviderError
        from anyy.providers.registry import ModelRegistry
        from anyy.profiles.config import Config

        config = Config()
        registry = ModelRegistry({n: config.provider(n) for n in config.provider_names()}, {})
        for name in ("openai", "anthropic"):
            try:
                asyncio.run(registry.provider(name))
            except ProviderError as exc:
                print(exc)
        """
    )
    done = _python(script)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 2, done.stdout
    assert "'httpx2' package is not installed" in lines[0]
    assert "pip install 'anyy[openai]'" in lines[0]
    assert "pip install 'anyy[anthropic]'" in lines[1]


def test_m5_the_default_install_has_both_sdks() -> None:
    """A plain install (no extra) brings the SDKs: a configured provider works without a second step."""
    from importlib.metadata import requires

    needed = {r.split(";")[0].split(">=")[0].strip() for r in requires("anyy") or [] if "extra ==" not in r}
    assert {"openai", "anthropic"} <= needed


async def test_g4_a_provider_is_built_once_off_the_loop_whether_warmed_or_first_used() -> None:
    """The warm-up thread and a first use share one build, in a thread: the loop goes on meanwhile."""
    entered, release, builds = threading.Event(), threading.Event(), []

    def held(name: str, settings: object, api_key: str) -> Provider:
        builds.append(threading.current_thread().name)
        entered.set()
        release.wait(60)
        return LOADERS["offline"](name, settings, api_key)  # type: ignore[arg-type]

    loaders: dict[str, Loader] = {"offline": held}
    registry = ModelRegistry({"slow": ProviderSettings(kind="offline")}, loaders=loaders)
    warming = registry.warm(["slow", "not-configured"])
    assert await asyncio.to_thread(entered.wait, 30)
    first_use = asyncio.create_task(registry.provider("slow"))
    for _ in range(100):  # the loop turns while the build is held
        await asyncio.sleep(0)
    assert not first_use.done()
    release.set()
    provider = await asyncio.wait_for(first_use, 30)
    await asyncio.to_thread(warming.join, 30)
    assert await registry.provider("slow") is provider
    assert builds == ["anyy-warm-providers"]  # one build, on the warm-up thread
