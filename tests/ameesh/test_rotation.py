"""H4 to H8: session policies, rotation with a resume summary, alerts."""

from __future__ import annotations

from tests.ameesh.conftest import Ameesh


def _kinds(ameesh: Ameesh, name: str) -> list[str]:
    return [i["kind"] for i in ameesh.json("thread", name)]


def test_h8_rotation_after_min_turns_in_four_steps(ameesh: Ameesh) -> None:
    ameesh.monkeypatch.setenv("AMEESH_SESSION_MAX_TOKENS", "10")
    ameesh.script({"match": "resume summary", "answer": "SUMMARY: one two three"})
    ameesh.add("orc", "--role", "orchestrator")
    ameesh("set", "orc", "session_policy=taille")
    for text in ("one", "two", "three", "four"):
        ameesh("send", "orc", text)
    ameesh("run")
    old, new = ameesh.json("sessions", "orc")
    assert old["turns"] == 3  # the summary turn, played in the old session (step 1), is not counted
    summaries = [t for t in ameesh.registry().turns("orc") if t.kind == "summary"]
    assert [t.session_id for t in summaries] == [old["session_id"]]
    assert old["summary"] == "SUMMARY: one two three"
    assert old["closed_at"] is not None  # step 3: kept in the history
    assert new["closed_at"] is None
    thread = ameesh.json("thread", "orc")
    summary_at = next(i for i, item in enumerate(thread) if item["kind"] == "summary")
    assert thread[summary_at]["text"] == "SUMMARY: one two three"  # step 2
    assert thread[summary_at + 1]["kind"] == "rotation"
    last_call = ameesh.calls()[-1]
    assert last_call["session_id"] == new["session_id"]  # step 4: a new session, prefixed with the summary
    assert last_call["prompt"].startswith("Resume summary of your previous session:\n\nSUMMARY: one two three")
    assert last_call["prompt"].endswith("four")
    assert ameesh.json("show", "orc")["rotation_state"] is None


def test_h8_never_before_min_turns_and_never_under_jamais(ameesh: Ameesh) -> None:
    ameesh.monkeypatch.setenv("AMEESH_SESSION_MAX_TOKENS", "10")
    ameesh.add("bob")
    ameesh("set", "bob", "session_policy=jamais")
    ameesh.add("ann")
    for text in ("one", "two"):
        ameesh("send", "ann", text)
    for text in ("one", "two", "three", "four"):
        ameesh("send", "bob", text)
    ameesh("run")
    assert len(ameesh.json("sessions", "ann")) == 1
    assert len(ameesh.json("sessions", "bob")) == 1
    # H7: the alert watches the tokens re-read per turn, whatever the policy (once per session).
    alerts = ameesh.json("alerts", "bob")
    assert [a["kind"] for a in alerts] == ["session_too_big"]


def test_h8_rotation_on_a_long_turn(ameesh: Ameesh) -> None:
    ameesh.monkeypatch.setenv("AMEESH_SESSION_MAX_TURN_SECONDS", "0")
    ameesh.monkeypatch.setenv("AMEESH_SESSION_MIN_TURNS", "1")
    ameesh.add("bob")
    ameesh("send", "bob", "one")
    ameesh("run")
    [old] = ameesh.json("sessions", "bob")
    assert "turn lasted" in old["close_reason"]


def test_h8_a_failed_or_empty_summary_keeps_the_session(ameesh: Ameesh) -> None:
    ameesh.monkeypatch.setenv("AMEESH_SESSION_MAX_TOKENS", "10")
    ameesh.script(
        {"match": "resume summary", "times": 1, "fail": "overloaded"},
        {"match": "resume summary", "times": 1, "answer": "   "},
        {"match": "resume summary", "answer": "SUMMARY ok"},
    )
    ameesh.add("bob")
    for text in ("one", "two", "three", "four", "five", "six"):
        ameesh("send", "bob", text)
    ameesh("run")
    notes = [i["text"] for i in ameesh.json("thread", "bob") if i["kind"] == "rotation"]
    assert "overloaded" in notes[0]
    assert "kept until the next try" in notes[0]
    assert "the summary was empty" in notes[1]
    old, new = ameesh.json("sessions", "bob")
    assert old["turns"] == 5  # turns one to five; the summary that worked is not counted (ameesh sessions)
    assert old["summary"] == "SUMMARY ok"
    assert ameesh.answers("bob")[3] == "RESUMED (3 earlier turns): four"  # still the old session
    # H13: neither the failed nor the empty summary stays in the kept session (rewound before them).
    assert ameesh.answers("bob")[4] == "RESUMED (4 earlier turns): five"
    assert ameesh.calls()[-1]["session_id"] == new["session_id"]


def test_h8_a_crash_between_steps_resumes_at_the_recorded_step(ameesh: Ameesh) -> None:
    ameesh.add("bob")
    ameesh("send", "bob", "one")
    ameesh("run")
    [first] = ameesh.json("sessions", "bob")
    with ameesh.registry() as reg:  # as left by a runner killed after step 1
        reg.update_agent("bob", rotation_state="summarised", rotation_reason="test", pending_summary="S1")
    ameesh("send", "bob", "two")
    ameesh("run")
    old, _new = ameesh.json("sessions", "bob")
    assert old["session_id"] == first["session_id"]
    assert old["close_reason"] == "test"
    assert _kinds(ameesh, "bob").count("summary") == 1
    assert ameesh.calls()[-1]["prompt"].startswith("Resume summary of your previous session:\n\nS1")
    assert ameesh.answers("bob")[-1].startswith("FRESH")


def test_h6_par_lot_opens_a_fresh_session_when_the_lot_changes(ameesh: Ameesh) -> None:
    ameesh.script({"match": "resume summary", "answer": "SUMMARY of lot A"})
    ameesh.add("bob")
    ameesh("send", "bob", "--lot", "A", "a1")
    ameesh("send", "bob", "--lot", "A", "a2")
    ameesh("send", "bob", "--lot", "B", "b1")
    ameesh("run")
    old, new = ameesh.json("sessions", "bob")
    assert (old["lot"], old["turns"], new["lot"]) == ("A", 2, "B")  # the summary turn is not counted
    assert old["close_reason"] == "lot A → B"
    assert ameesh.calls()[-1]["prompt"].startswith("Resume summary of your previous session:\n\nSUMMARY of lot A")


def test_h4_build_and_review_agents_open_a_fresh_session_per_lot(ameesh: Ameesh) -> None:
    ameesh.script({"match": "resume summary", "answer": "SUMMARY: state, scope, rules, known defects"})
    ameesh.add("bob", "--role", "build")
    ameesh.add("rev", "--role", "review")
    for name in ("bob", "rev"):
        ameesh("send", name, "--lot", "L1", "work on L1")
        ameesh("send", name, "--lot", "L1", "fix the review of L1")  # reviews and fixes stay in the lot's session
        ameesh("send", name, "--lot", "L2", "work on L2")
    ameesh("run")
    for name in ("bob", "rev"):
        one, two = ameesh.json("sessions", name)
        assert (one["lot"], two["lot"]) == ("L1", "L2")
        assert one["close_reason"] == "lot L1 → L2"
    opening = [c["prompt"] for c in ameesh.calls() if c["prompt"].endswith("work on L2")]
    assert len(opening) == 2
    assert all(p.startswith("Resume summary of your previous session:\n\nSUMMARY: state, scope") for p in opening)


def test_h4_orchestrators_keep_one_long_session_rotated_only_when_it_grows(ameesh: Ameesh) -> None:
    ameesh.add("orc", "--role", "orchestrator")  # AMEESH_SESSION_POLICY unset: an orchestrator's default
    shown = ameesh.json("show", "orc")
    assert (shown["settings"]["session_policy"], shown["effective"]["session_policy"]) == (None, "taille")
    assert shown["sources"]["session_policy"] == "default for orchestrator agents"
    for lot in ("L1", "L2", "L3"):
        ameesh("send", "orc", "--lot", lot, f"plan {lot}")
    ameesh("run")
    (only,) = ameesh.json("sessions", "orc")  # lots come and go: one long session
    assert only["closed_at"] is None
    ameesh.monkeypatch.setenv("AMEESH_SESSION_MAX_TOKENS", "10")
    ameesh("send", "orc", "--lot", "L4", "plan L4")
    ameesh("send", "orc", "--lot", "L4", "go on")
    ameesh("run")
    old, new = ameesh.json("sessions", "orc")  # …rotated with a resume summary when it grows
    assert "tokens" in old["close_reason"]
    assert new["closed_at"] is None
    # Its written state outlives the session: the thread keeps every prompt and answer of the old one.
    prompts = [i["text"] for i in ameesh.json("thread", "orc") if i["kind"] == "prompt"]
    assert prompts == ["plan L1", "plan L2", "plan L3", "plan L4", "go on"]


def test_h6_taille_and_jamais_keep_the_session_across_lots(ameesh: Ameesh) -> None:
    for name, policy in (("orc", "taille"), ("bob", "jamais")):
        ameesh.add(name)
        ameesh("set", name, f"session_policy={policy}")
        ameesh("send", name, "--lot", "A", "a1")
        ameesh("send", name, "--lot", "B", "b1")
    ameesh("run")
    for name in ("orc", "bob"):
        assert len(ameesh.json("sessions", name)) == 1


def test_h7_restart_on_a_brief(ameesh: Ameesh) -> None:
    brief = ameesh.work / "brief.md"
    brief.write_text("BRIEF: scope and rules\n", encoding="utf-8")
    ameesh.add("bob")
    ameesh("send", "bob", "one")
    ameesh("run")
    ameesh("restart", "bob", "--brief", str(brief))
    ameesh("send", "bob", "two")
    ameesh("run")
    old, new = ameesh.json("sessions", "bob")
    assert old["close_reason"] == "restart on a brief"
    assert "BRIEF: scope and rules" in ameesh.calls()[-1]["prompt"]
    assert ameesh.calls()[-1]["session_id"] == new["session_id"]


def test_h6_ameesh_session_policy_governs_every_role_when_set_and_show_says_where_each_setting_came_from(
    ameesh: Ameesh,
) -> None:
    ameesh.monkeypatch.setenv("AMEESH_SESSION_MAX_TOKENS", "10")
    ameesh.monkeypatch.setenv("AMEESH_SESSION_MIN_TURNS", "1")
    ameesh.monkeypatch.setenv("AMEESH_SESSION_POLICY", "jamais")
    canon_file = ameesh.work / ".ameesh" / "canon.toml"
    canon_file.parent.mkdir()
    canon_file.write_text('[roles.orchestrator]\neffort = "high"\nmax_effort = "high"\n', encoding="utf-8")
    ameesh.add("orc", "--role", "orchestrator")
    ameesh("set", "orc", "model=m-1")
    shown = ameesh.json("show", "orc")
    assert shown["effective"]["session_policy"] == "jamais"  # the variable, not the orchestrators' taille
    assert shown["sources"] == {
        "model": "set",
        "effort": f"canon roles.orchestrator ({canon_file})",
        "tier": "default",
        "session_policy": "env AMEESH_SESSION_POLICY",
    }
    text = ameesh("show", "orc").output
    assert "session_policy: jamais (env AMEESH_SESSION_POLICY)" in text
    assert "tier: (the harness default) (default)" in text
    for word in ("one", "two", "three"):
        ameesh("send", "orc", word)
    ameesh("run")
    (only,) = ameesh.json("sessions", "orc")  # over max_tokens, yet never rotated: jamais
    assert only["closed_at"] is None
    ameesh("set", "orc", "session_policy=taille")
    assert ameesh.json("show", "orc")["sources"]["session_policy"] == "set"  # the agent's own wins
    ameesh("set", "orc", "session_policy=")
    ameesh.monkeypatch.setenv("AMEESH_SESSION_POLICY", "sometimes")
    refused = ameesh("show", "orc", ok=False)
    assert refused.exit_code == 1
    assert "AMEESH_SESSION_POLICY=sometimes: not one of par-lot, taille, jamais" in refused.output
