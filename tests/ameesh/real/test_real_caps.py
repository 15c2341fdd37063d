"""H12 with the real Claude Code and Codex CLI: a canon tightened after ``ameesh set`` lowers the model
the next turn really asks the model server for (pi takes only the models declared in its models.json)."""

from __future__ import annotations

import pytest

from tests.ameesh.real.conftest import Real


@pytest.mark.parametrize("real", ["claude", "codex"], indirect=True)
def test_h12_a_tightened_canon_lowers_the_model_the_harness_asks_for(real: Real) -> None:
    canon = real.workdir.parent / "canon.toml"
    real.ameesh.monkeypatch.setenv("AMEESH_CANON", str(canon))
    canon.write_text(f'[roles.build]\nmodels = ["{real.model}", "other-model"]\n', encoding="utf-8")
    real.add("bob", policy="jamais")
    real.ameesh("set", "bob", "model=other-model")
    real.ameesh("send", "bob", "turn 1")
    real.ameesh("run")
    canon.write_text(f'[roles.build]\nmodel = "{real.model}"\nmodels = ["{real.model}"]\n', encoding="utf-8")
    real.ameesh("send", "bob", "turn 2")
    real.ameesh("run")
    first, second = real.turns()
    assert first.body["model"] == "other-model"
    assert second.body["model"] == real.model  # not the model `ameesh set` chose: the canon no longer allows it
    (note,) = [i["text"] for i in real.ameesh.json("thread", "bob") if i["kind"] == "caps"]
    assert f"model other-model → {real.model}" in note
    assert len(real.ameesh.json("sessions", "bob")) == 1  # the same session, on the allowed model
