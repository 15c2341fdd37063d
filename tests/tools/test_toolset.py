"""Building a session's tool set from names (M3, M4, M6)."""

from __future__ import annotations

from typing import Any

import pytest

from anyy.domain.errors import InvalidInput
from anyy.domain.model_io import ToolSpec
from anyy.profiles.config import ToolSettings
from anyy.tools import KNOWN_TOOL_NAMES, ToolSet, build_tools, check_tool_names
from anyy.tools.base import ToolContext, ToolOutcome

pytestmark = pytest.mark.anyio


def test_m4_unknown_tool_name_is_invalid_input() -> None:
    with pytest.raises(InvalidInput) as raised:
        build_tools(["read_file", "teleport"], codemode=False)
    message = str(raised.value)
    assert "unknown tool name 'teleport'" in message
    assert (
        "the known tools are read_file, write_file, edit_file, list_dir, shell, web_fetch, memory, ask_user" in message
    )
    with pytest.raises(InvalidInput, match="turn Codemode on instead"):
        check_tool_names(["run_script"])


def test_m6_default_tools_build_in_a_stable_order() -> None:
    defaults = ToolSettings().enabled
    tools = build_tools(defaults, codemode=False)
    assert [spec.name for spec in tools.specs()] == ["read_file", "write_file", "shell", "memory", "ask_user"]
    assert "web_fetch" not in tools.names()  # off unless enabled (M6)
    shuffled = build_tools(["ask_user", "shell", "read_file", "shell"], codemode=False)
    assert shuffled.names() == ("read_file", "shell", "ask_user")
    assert check_tool_names("shell") == ("shell",)
    assert set(build_tools(KNOWN_TOOL_NAMES, codemode=False).names()) == set(KNOWN_TOOL_NAMES)
    assert build_tools([], codemode=False).specs() == ()


def test_m6_every_tool_spec_is_a_strict_json_schema_object() -> None:
    for spec in build_tools(KNOWN_TOOL_NAMES, codemode=False).specs() + build_tools(["shell"], codemode=True).specs():
        assert isinstance(spec, ToolSpec)
        assert spec.description
        schema = spec.parameters
        assert schema["type"] == "object"
        assert schema["additionalProperties"] is False
        assert set(schema["required"]) <= set(schema["properties"])
        for prop in schema["properties"].values():
            assert prop["type"] in {"string", "integer", "number", "array"}
            if prop["type"] == "array":  # delegate's tasks: a list of strict objects (K2)
                items = prop["items"]
                assert items["type"] in {"string", "object"}
                assert items["type"] == "string" or items["additionalProperties"] is False


async def test_m6_tool_set_runs_by_name_and_reports_unknown_names(context: ToolContext) -> None:
    tools = build_tools(["shell"], codemode=False)
    ran = await tools.run("shell", {"command": "echo hi"}, context)
    assert ran.text == "hi\n[exit code 0]"
    invented = await tools.run("read_file", {"path": "x"}, context)
    assert invented == ToolOutcome(
        text="there is no tool 'read_file'; the tools you can call are: shell", is_error=True
    )


async def test_m6_codemode_tool_set_still_runs_inner_tools_for_the_runtime(context: ToolContext) -> None:
    tools = build_tools(["shell", "read_file"], codemode=True)
    assert tools.names() == ("run_script",)
    assert tools.enabled_names == ("read_file", "shell")
    inner = await tools.run("shell", {"command": "echo inner"}, context)
    assert inner.text == "inner\n[exit code 0]"


class _Broken:
    spec = ToolSpec(name="broken", description="fails", parameters={"type": "object", "properties": {}})

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolOutcome:
        raise ZeroDivisionError("division by zero")


async def test_m6_a_tool_bug_becomes_an_error_outcome(context: ToolContext) -> None:
    tools = ToolSet([_Broken()], codemode=False)
    outcome = await tools.run("broken", {}, context)
    assert outcome == ToolOutcome(text="broken failed unexpectedly: ZeroDivisionError: division by zero", is_error=True)
