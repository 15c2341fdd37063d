"""docs/api.md is generated from the method table and kept in step with it (G2: one documented API)."""

from __future__ import annotations

from pathlib import Path

import pytest

from anyy.gateway import apidoc
from anyy.gateway.methods import TABLE
from commons import jsonrpc


def test_g2_docs_api_md_is_up_to_date(capsys: pytest.CaptureFixture[str]) -> None:
    code = apidoc.main(["--check"])
    err = capsys.readouterr().err
    assert code == 0, f"docs/api.md is out of date: run `python -m anyy.gateway.apidoc` ({err.strip()})"


def test_g2_check_fails_and_says_how_to_regenerate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    page = tmp_path / "api.md"
    page.write_text("# stale\n")
    assert apidoc.main(["--check", "--output", str(page)]) == 1
    assert "python -m anyy.gateway.apidoc" in capsys.readouterr().err
    assert apidoc.main(["--output", str(page)]) == 0
    assert apidoc.main(["--check", "--output", str(page)]) == 0


def test_g2_every_method_its_parameters_and_every_error_code_are_documented() -> None:
    page = apidoc.render()
    for method in TABLE.methods.values():
        assert f"#### `{method.name}`" in page
        for name in method.params.__struct_fields__:
            assert f"| `{name}` |" in page, (method.name, name)
    for code, name in jsonrpc.ERROR_NAMES.items():
        assert f"| {code} | `{name}` |" in page
    assert "`text_delta`" in page
    assert "Authorization: Bearer TOKEN" in page
    # A parameter's type, default and comment come from its struct.
    assert "| `entry_id` | integer \\| null | `null` | default: the head |" in page
    assert "**Result**: Submission" in page  # session.send's result
