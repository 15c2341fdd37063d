"""``/provider``, ``/model``, ``/effort``: the current session's model settings (SPEC M1, X4), by name or
picked from the Gateway's catalogue (``models.list``). ``session.settings`` changes that session only:
other sessions keep theirs, and a new session starts from the profile's values."""

from __future__ import annotations

from anyy.api import methods as m
from anyy.api.params import NoParams, SettingsParams
from anyy.client.errors import GatewayError
from anyy.tui.draft import DraftRefused, choose
from anyy.tui.host import Host
from anyy.tui.screens import ChoiceScreen

EFFORTS = [("default", "default (the provider chooses)"), ("low", "low"), ("medium", "medium"), ("high", "high")]


class ModelSettings:
    def __init__(self, host: Host) -> None:
        self.host = host
        self.state = host.state

    async def provider(self, argument: str) -> None:
        catalog = await self.host.call(m.MODELS_LIST, NoParams())
        providers = {p.name: p.models for p in catalog.providers}
        session = self.state.session

        async def chosen(name: str | None) -> None:
            if name is None:
                return
            models = providers.get(name, [])
            model = None if not models or (session is not None and session.model in models) else models[0]
            await self.apply(provider=name, model=model)

        if argument:
            await chosen(argument)
            return
        choices = [(name, name + (f" ({', '.join(models)})" if models else "")) for name, models in providers.items()]
        current = session.provider if session is not None else None
        await self.host.push_screen(ChoiceScreen("Provider for this session", choices, current), chosen)

    async def model(self, argument: str) -> None:
        if argument:
            await self.apply(model=argument)
            return
        catalog = await self.host.call(m.MODELS_LIST, NoParams())
        session = self.state.session
        provider = session.provider if session is not None else ""
        choices: list[tuple[str, str]] = []
        for entry in catalog.providers:
            if entry.name == provider:
                choices += [(f"{provider}\t{name}", name) for name in entry.models]
        choices += [(f"alias\t{a.name}", f"{a.name} → {a.provider}/{a.model}") for a in catalog.aliases]
        if not choices:
            await self.host.say(f"Provider {provider} lists no models: type /model NAME.")
            return

        async def chosen(value: str | None) -> None:
            if value is None:
                return
            provider_name, _, model = value.partition("\t")
            await self.apply(provider=provider_name, model=model)

        current = f"{provider}\t{session.model if session is not None else ''}"
        await self.host.push_screen(ChoiceScreen("Model for this session", choices, current), chosen)

    async def effort(self, argument: str) -> None:
        async def chosen(value: str | None) -> None:
            if value is not None:
                await self.apply(effort="" if value == "default" else value)

        if argument:
            await chosen(argument)
            return
        session = self.state.session
        current = (session.effort if session is not None else "") or "default"
        await self.host.push_screen(ChoiceScreen("Reasoning effort for this session", EFFORTS, current), chosen)

    async def apply(self, *, provider: str | None = None, model: str | None = None, effort: str | None = None) -> None:
        """M1: ``session.settings`` changes this session only; other sessions keep theirs. A new session not
        created yet (a draft) takes the choice now, checked against the catalogue, and is created with it."""
        try:
            if self.host.drafting and self.state.session is not None:
                catalog = await self.host.call(m.MODELS_LIST, NoParams())
                s = choose(catalog, self.state.session, provider=provider, model=model, effort=effort)
            else:
                params = SettingsParams(session_id=self.state.session_id, provider=provider, model=model, effort=effort)
                s = await self.host.call(m.SESSION_SETTINGS, params)
        except (GatewayError, DraftRefused) as exc:
            await self.host.say(f"Not changed: {exc}")
            return
        self.state.session = s
        effort_text = f" ({s.effort})" if s.effort else ""
        await self.host.say(f"This session now uses {s.provider}/{s.model}{effort_text}; other sessions keep theirs.")
