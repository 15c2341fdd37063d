"""``/provider``, ``/model``, ``/effort``: the current session's model settings (SPEC M1, X4), by name or
picked from the Gateway's catalogue (``models.list``). ``session.settings`` changes that session only:
other sessions keep theirs, and a new session starts from the profile's values."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from anyy.tui.client import GatewayGone
from anyy.tui.screens import ChoiceScreen
from commons.jsonrpc import RpcError

if TYPE_CHECKING:
    from anyy.tui.app import AnyyApp

EFFORTS = [("default", "default (the provider chooses)"), ("low", "low"), ("medium", "medium"), ("high", "high")]


async def command_provider(app: AnyyApp, argument: str) -> None:
    catalog = await app.call("models.list", {})
    providers = {str(p["name"]): [str(m) for m in p.get("models", [])] for p in catalog.get("providers", [])}

    async def chosen(name: str | None) -> None:
        if name is None:
            app.touch()
            return
        models = providers.get(name, [])
        model = None if not models or app.session.get("model") in models else models[0]
        await apply_settings(app, provider=name, model=model)

    if argument:
        await chosen(argument)
        return
    choices = [(name, name + (f" ({', '.join(models)})" if models else "")) for name, models in providers.items()]
    await app.push_screen(ChoiceScreen("Provider for this session", choices, app.session.get("provider")), chosen)


async def command_model(app: AnyyApp, argument: str) -> None:
    if argument:
        await apply_settings(app, model=argument)
        return
    catalog = await app.call("models.list", {})
    provider = str(app.session.get("provider", ""))
    choices: list[tuple[str, str]] = []
    for entry in catalog.get("providers", []):
        if entry["name"] == provider:
            choices += [(f"{provider}\t{m}", str(m)) for m in entry.get("models", [])]
    choices += [
        (f"alias\t{a['name']}", f"{a['name']} → {a['provider']}/{a['model']}") for a in catalog.get("aliases", [])
    ]
    if not choices:
        await app.say(f"Provider {provider} lists no models: type /model NAME.")
        return

    async def chosen(value: str | None) -> None:
        if value is None:
            app.touch()
            return
        provider_name, _, model = value.partition("\t")
        await apply_settings(app, provider=provider_name, model=model)

    current = f"{provider}\t{app.session.get('model', '')}"
    await app.push_screen(ChoiceScreen("Model for this session", choices, current), chosen)


async def command_effort(app: AnyyApp, argument: str) -> None:
    async def chosen(value: str | None) -> None:
        if value is None:
            app.touch()
            return
        await apply_settings(app, effort="" if value == "default" else value)

    if argument:
        await chosen(argument)
        return
    current = str(app.session.get("effort") or "default")
    await app.push_screen(ChoiceScreen("Reasoning effort for this session", EFFORTS, current), chosen)


async def apply_settings(
    app: AnyyApp, *, provider: str | None = None, model: str | None = None, effort: str | None = None
) -> None:
    """M1: ``session.settings`` changes this session only; other sessions keep theirs."""
    params: dict[str, Any] = {"session_id": app.session_id}
    for key, value in (("provider", provider), ("model", model), ("effort", effort)):
        if value is not None:
            params[key] = value
    try:
        app.session = await app.call("session.settings", params)
    except (RpcError, GatewayGone) as exc:
        await app.say(f"Not changed: {exc}")
        return
    s = app.session
    effort_text = f" ({s['effort']})" if s.get("effort") else ""
    await app.say(f"This session now uses {s['provider']}/{s['model']}{effort_text}; other sessions keep theirs.")
    app.show_state()
