"""``/provider``, ``/model``, ``/effort``: the current session's model settings (SPEC M1, X4), by name or
picked from the Gateway's catalogue (``models.list``). ``session.settings`` changes that session only:
other sessions keep theirs, and a new session starts from the profile's values."""

from __future__ import annotations

from typing import Any

from anyy.client.errors import GatewayError
from anyy.tui.host import Host
from anyy.tui.screens import ChoiceScreen

EFFORTS = [("default", "default (the provider chooses)"), ("low", "low"), ("medium", "medium"), ("high", "high")]


class ModelSettings:
    def __init__(self, host: Host) -> None:
        self.host = host
        self.state = host.state

    async def provider(self, argument: str) -> None:
        catalog = await self.host.call("models.list", {})
        providers = {str(p["name"]): [str(m) for m in p.get("models", [])] for p in catalog.get("providers", [])}

        async def chosen(name: str | None) -> None:
            if name is None:
                return
            models = providers.get(name, [])
            model = None if not models or self.state.session.get("model") in models else models[0]
            await self.apply(provider=name, model=model)

        if argument:
            await chosen(argument)
            return
        choices = [(name, name + (f" ({', '.join(models)})" if models else "")) for name, models in providers.items()]
        current = self.state.session.get("provider")
        await self.host.push_screen(ChoiceScreen("Provider for this session", choices, current), chosen)

    async def model(self, argument: str) -> None:
        if argument:
            await self.apply(model=argument)
            return
        catalog = await self.host.call("models.list", {})
        provider = str(self.state.session.get("provider", ""))
        choices: list[tuple[str, str]] = []
        for entry in catalog.get("providers", []):
            if entry["name"] == provider:
                choices += [(f"{provider}\t{m}", str(m)) for m in entry.get("models", [])]
        choices += [
            (f"alias\t{a['name']}", f"{a['name']} → {a['provider']}/{a['model']}") for a in catalog.get("aliases", [])
        ]
        if not choices:
            await self.host.say(f"Provider {provider} lists no models: type /model NAME.")
            return

        async def chosen(value: str | None) -> None:
            if value is None:
                return
            provider_name, _, model = value.partition("\t")
            await self.apply(provider=provider_name, model=model)

        current = f"{provider}\t{self.state.session.get('model', '')}"
        await self.host.push_screen(ChoiceScreen("Model for this session", choices, current), chosen)

    async def effort(self, argument: str) -> None:
        async def chosen(value: str | None) -> None:
            if value is not None:
                await self.apply(effort="" if value == "default" else value)

        if argument:
            await chosen(argument)
            return
        current = str(self.state.session.get("effort") or "default")
        await self.host.push_screen(ChoiceScreen("Reasoning effort for this session", EFFORTS, current), chosen)

    async def apply(self, *, provider: str | None = None, model: str | None = None, effort: str | None = None) -> None:
        """M1: ``session.settings`` changes this session only; other sessions keep theirs."""
        params: dict[str, Any] = {"session_id": self.state.session_id}
        for key, value in (("provider", provider), ("model", model), ("effort", effort)):
            if value is not None:
                params[key] = value
        try:
            s = await self.host.call("session.settings", params)
        except GatewayError as exc:
            await self.host.say(f"Not changed: {exc}")
            return
        self.state.session = s
        effort_text = f" ({s['effort']})" if s.get("effort") else ""
        await self.host.say(
            f"This session now uses {s['provider']}/{s['model']}{effort_text}; other sessions keep theirs."
        )
