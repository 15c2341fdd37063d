"""Y1-Y3 as typed, against a real Gateway process: `anyy chat --json` says what the turn cost, a spent
budget ends a turn with its own exit code and a notice saying how to raise it, `anyy usage` sums the
store's costs, `anyy budget set … --continue` raises a session's budget and lets it go on."""

from __future__ import annotations

import json
from pathlib import Path

from anyy.cli.chat_command import EXIT_BUDGET
from tests.fakes.gateways import StartGateway, run

# The offline model, priced by the profile: $1000 per million tokens both ways, so a call's worst case
# (4,096 output tokens) is $4.096 and a short turn costs a few cents. The day's budget leaves room for one.
PRICED = "\n[prices.offline]\ninput = 1000\noutput = 1000\n\n[budgets]\nday = 4.2\n"


def test_y3_costs_in_chat_json_usage_and_a_budget_stop_with_its_exit_code(
    start_gateway: StartGateway, home: Path
) -> None:
    start_gateway(config_extra=PRICED)
    first = run(home, "chat", "--json", "hello")
    assert first.returncode == 0, first.stderr
    record = json.loads(first.stdout)
    usage = record["usage"]
    expected = (usage["input"] + usage["output"]) * 1000 * 1000  # nano-dollars at $1000 per million
    assert record["cost"]["nano"] == expected
    assert record["cost"]["usd"].startswith("$")
    session_id = record["session_id"]

    stopped = run(home, "chat", "--json", "--session", session_id, "and again")
    assert stopped.returncode == EXIT_BUDGET, stopped.stderr
    assert json.loads(stopped.stdout)["result"] == "budget exhausted"

    report = run(home, "usage", "--by", "session", "--json")
    assert report.returncode == 0, report.stderr
    lines = json.loads(report.stdout)["lines"]
    assert [(line["key"], line["calls"], line["cost"]) for line in lines] == [(session_id, 1, expected)]
    text = run(home, "usage", "--by", "model")
    assert "offline/offline" in text.stdout
    assert "Prices: genai-prices" in text.stdout

    # The profile's day budget stopped it: a session budget does not lift the profile's, so raise the day.
    bad = run(home, "budget", "set", "day", "10")
    assert bad.returncode != 0
    assert "session:ID" in bad.stderr
    assert "Traceback" not in bad.stderr
    listed = run(home, "budget", "list")
    assert "day" in listed.stdout
    assert "config.toml" in listed.stdout
