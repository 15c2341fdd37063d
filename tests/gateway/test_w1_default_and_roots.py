"""W1, the profile's ``[workspaces]``: a session made without a workspace gets the profile's ``default``
(else the Gateway's working directory), kept canonical; ``roots`` refuse a folder outside them at
creation, listing them, and refuse a session whose folder fell outside them at its next turn."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from commons.jsonrpc import RpcError
from tests.fakes.gateways import LiveGateway


def _configured(tmp_path: Path, section: str) -> LiveGateway:
    live = LiveGateway(tmp_path)
    config = live.profile.path / "config.toml"
    text = config.read_text()
    start = text.index("[workspaces]")
    end = text.index("[store]")
    config.write_text(text[:start] + section + "\n\n" + text[end:])
    return live


def test_w1_a_session_without_a_workspace_gets_the_profiles_default(tmp_path: Path) -> None:
    chosen = tmp_path / "agent home"
    chosen.mkdir()
    (tmp_path / "link").symlink_to(chosen)
    with _configured(tmp_path, f'[workspaces]\ndefault = "{tmp_path}/link"') as live:
        made = live.call("session.create", {})
        assert made["workspace"] == os.path.realpath(chosen)  # canonical: the link followed
        sent = live.call("session.send", {"new": {}, "text": "hello"})
        other = live.call("session.get", {"session_id": sent["session_id"]})["session"]
        assert other["workspace"] == os.path.realpath(chosen)


def test_w1_without_a_default_it_is_the_gateways_working_directory(gateway: LiveGateway) -> None:
    made = gateway.call("session.create", {})
    assert made["workspace"] == os.path.realpath(gateway.workdir)


def test_w1_roots_refuse_a_workspace_outside_them(tmp_path: Path) -> None:
    allowed = tmp_path / "allowed"
    (allowed / "deep").mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    escape = allowed / "escape"
    escape.symlink_to(outside)  # inside by its name, outside once followed
    with _configured(tmp_path, f'[workspaces]\nroots = ["{allowed}"]') as live:
        inside = live.call("session.create", {"workspace": str(allowed / "deep")})
        assert inside["workspace"] == os.path.realpath(allowed / "deep")
        for refused in (outside, escape):
            with pytest.raises(RpcError) as error:
                live.call("session.create", {"workspace": str(refused)})
            assert "outside this profile's workspace roots" in error.value.message
            assert str(allowed) in error.value.message
        with pytest.raises(RpcError) as relative:
            live.call("session.create", {"workspace": "deep"})
        assert "absolute" in relative.value.message
