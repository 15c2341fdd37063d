"""H10: the canon's defaults and caps, and ``ameesh set``."""

from __future__ import annotations

from tests.ameesh.conftest import Ameesh

CANON = """
[defaults]
effort = "low"

[roles.build]
model = "small"
models = ["small", "big"]
max_effort = "high"
tiers = ["standard", "premium"]

[tiers.standard]
models = ["small"]
"""


def test_h10_set_within_caps_applies_at_the_next_turn(ameesh: Ameesh) -> None:
    canon = ameesh.work / ".ameesh" / "canon.toml"
    canon.parent.mkdir()
    canon.write_text(CANON, encoding="utf-8")
    ameesh.add("bob")
    assert ameesh.json("show", "bob")["effective"] | {"session_policy": None} == {
        "model": "small",
        "effort": "low",
        "tier": None,
        "session_policy": None,
    }
    ameesh("send", "bob", "one")
    ameesh("run")
    assert "big (2" not in ameesh("set", "bob", "model=big", "effort=high").output
    ameesh("send", "bob", "two")
    ameesh("run")
    assert [(c["model"], c["effort"]) for c in ameesh.calls()] == [("small", "low"), ("big", "high")]
    ameesh("set", "bob", "model=", "effort=")
    assert ameesh.json("show", "bob")["effective"]["model"] == "small"
    assert ameesh.json("show", "bob")["settings"]["model"] is None


def test_h10_set_refuses_anything_over_a_cap_naming_it(ameesh: Ameesh) -> None:
    canon = ameesh.root / "canon.toml"
    canon.parent.mkdir(parents=True)
    canon.write_text(CANON, encoding="utf-8")
    ameesh.monkeypatch.setenv("AMEESH_CANON", str(canon))
    ameesh.add("bob")
    cases = {
        "model=huge": "roles.build.models",
        "effort=max": "roles.build.max_effort = high",
        "tier=gold": "roles.build.tiers",
        "effort=loud": "not one of",
        "session_policy=sometimes": "not one of",
    }
    for assignment, cap in cases.items():
        result = ameesh("set", "bob", assignment, ok=False)
        assert result.exit_code == 1, assignment
        assert cap in result.output, result.output
    # The tier's caps apply with the tier.
    result = ameesh("set", "bob", "tier=standard", "model=big", ok=False)
    assert "tiers.standard.models" in result.output
    assert ameesh.json("show", "bob")["settings"] == {
        "model": None,
        "effort": None,
        "tier": None,
        "session_policy": None,
    }
    assert ameesh("set", "bob", "bogus=1", ok=False).exit_code == 2


def test_h10_an_effort_one_step_over_the_cap_is_refused_and_the_cap_itself_allowed(ameesh: Ameesh) -> None:
    # The case people meet: max_effort = "high" and the next level up ("xhigh"), not the far end of the scale.
    canon = ameesh.root / "canon.toml"
    canon.parent.mkdir(parents=True)
    canon.write_text(CANON, encoding="utf-8")
    ameesh.monkeypatch.setenv("AMEESH_CANON", str(canon))
    ameesh.add("bob")
    over = ameesh("set", "bob", "effort=xhigh", ok=False)
    assert over.exit_code == 1
    assert "roles.build.max_effort = high" in over.output
    assert ameesh.json("show", "bob")["settings"]["effort"] is None
    ameesh("set", "bob", "effort=high")
    assert ameesh.json("show", "bob")["effective"]["effort"] == "high"


def test_h10_an_invalid_canon_is_reported(ameesh: Ameesh) -> None:
    canon = ameesh.root / "canon.toml"
    canon.parent.mkdir(parents=True)
    canon.write_text("[roles.build]\ncolour = 'red'\n", encoding="utf-8")
    ameesh.monkeypatch.setenv("AMEESH_CANON", str(canon))
    ameesh.add("bob")
    result = ameesh("show", "bob", ok=False)
    assert "is invalid" in result.output
    assert "colour" in result.output


def test_h6_session_policy_defaults_from_the_environment(ameesh: Ameesh) -> None:
    ameesh.add("bob")
    ameesh.monkeypatch.setenv("AMEESH_SESSION_POLICY", "taille")
    assert ameesh.json("show", "bob")["effective"]["session_policy"] == "taille"
    ameesh("set", "bob", "session_policy=jamais")
    assert ameesh.json("show", "bob")["effective"]["session_policy"] == "jamais"
