"""A profile's config.toml: defaults, the commented file, and errors that name key, table and file."""

from __future__ import annotations

from pathlib import Path

import pytest

from anyy.domain.errors import InvalidInput
from anyy.profiles import Config, FileError, create_profile, load_config
from anyy.profiles.config import DEFAULT_CONFIG_TOML, ProviderSettings


def write_config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_m1_missing_config_gives_defaults(tmp_path: Path) -> None:
    config = load_config(tmp_path / "config.toml")
    assert config == Config()
    assert (config.model.provider, config.model.model, config.model.effort) == ("offline", "offline", "")
    assert config.retries.enabled is True
    assert config.retries.max_retries == 3
    assert (config.queue.steering, config.queue.follow_up) == ("one-at-a-time", "one-at-a-time")
    assert "web_fetch" not in config.tools.enabled
    assert config.tools.codemode is False


def test_m1_default_config_file_round_trips(home: Path) -> None:
    profile = create_profile(home, "default")
    assert profile.config_path.read_text(encoding="utf-8") == DEFAULT_CONFIG_TOML
    assert profile.load_config() == Config()


def test_m1_default_config_file_is_commented_for_every_table() -> None:
    for table in ("[model]", "[providers.", "[retries]", "[compaction]", "[queue]", "[tools]"):
        assert table in DEFAULT_CONFIG_TOML
    assert DEFAULT_CONFIG_TOML.count("\n#") >= 10


def test_a1_config_unknown_key_names_key_section_and_file(tmp_path: Path) -> None:
    path = write_config(tmp_path, '[model]\nprovider = "offline"\nmodle = "x"\n')
    with pytest.raises(FileError) as caught:
        load_config(path)
    message = str(caught.value)
    assert message.startswith(f"config.toml ({path}): unknown key 'modle' in [model]")
    assert "effort, model, provider" in message  # the keys that do exist


def test_a1_config_unknown_table_is_refused(tmp_path: Path) -> None:
    path = write_config(tmp_path, "[retry]\nenabled = false\n")
    with pytest.raises(FileError, match=r"unknown key 'retry' at the top level .*retries"):
        load_config(path)


def test_a1_config_unknown_key_in_a_provider_names_the_provider(tmp_path: Path) -> None:
    path = write_config(tmp_path, '[providers.local]\nkind = "openai"\nbase = "http://x"\n')
    with pytest.raises(FileError, match=r"unknown key 'base' in \[providers\.local\] .*base_url"):
        load_config(path)


def test_a1_config_provider_without_kind_is_refused(tmp_path: Path) -> None:
    path = write_config(tmp_path, '[providers.local]\nbase_url = "http://x"\n')
    with pytest.raises(FileError, match=r"missing key 'kind' in \[providers\.local\]"):
        load_config(path)


def test_a1_config_mistyped_value_names_key_section_and_file(tmp_path: Path) -> None:
    path = write_config(tmp_path, '[retries]\nmax_retries = "three"\n')
    with pytest.raises(FileError) as caught:
        load_config(path)
    assert str(caught.value) == f"config.toml ({path}): key 'max_retries' in [retries]: expected `int`, got `str`"


def test_a1_config_table_given_as_a_value_is_refused(tmp_path: Path) -> None:
    path = write_config(tmp_path, "model = 3\n")
    with pytest.raises(FileError, match=r"key 'model' at the top level: expected a table, got `int`"):
        load_config(path)


def test_a1_config_list_item_of_wrong_type_is_located(tmp_path: Path) -> None:
    path = write_config(tmp_path, '[tools]\nenabled = ["shell", 3]\n')
    with pytest.raises(FileError, match=r"key 'enabled\[1\]' in \[tools\]: expected `str`, got `int`"):
        load_config(path)


def test_q7_config_queue_mode_lists_the_allowed_values(tmp_path: Path) -> None:
    path = write_config(tmp_path, '[queue]\nsteering = "some"\n')
    with pytest.raises(FileError, match=r"key 'steering' in \[queue\]: invalid value 'some' .*'all', 'one-at-a-time'"):
        load_config(path)


def test_r3_config_negative_retries_are_refused(tmp_path: Path) -> None:
    path = write_config(tmp_path, "[retries]\nmax_retries = -1\n")
    with pytest.raises(FileError, match=r"key 'max_retries' in \[retries\]: expected `int` >= 0"):
        load_config(path)


def test_r4_config_budget_must_be_positive(tmp_path: Path) -> None:
    path = write_config(tmp_path, "[compaction]\nbudget_tokens = 0\n")
    with pytest.raises(FileError, match=r"'budget_tokens' in \[compaction\]"):
        load_config(path)


def test_a1_config_invalid_toml_names_the_file(tmp_path: Path) -> None:
    path = write_config(tmp_path, "[model\n")
    with pytest.raises(FileError, match=rf"config.toml \({path}\): not valid TOML: .*line 1"):
        load_config(path)


def test_a1_config_errors_are_invalid_input(tmp_path: Path) -> None:
    path = write_config(tmp_path, "nope = 1\n")
    with pytest.raises(InvalidInput):
        load_config(path)


def test_m5_config_provider_tables_are_read(tmp_path: Path) -> None:
    path = write_config(
        tmp_path,
        '[model]\nprovider = "local"\nmodel = "llama3"\neffort = "high"\n'
        '[providers.local]\nkind = "openai"\nbase_url = "http://127.0.0.1:11434/v1"\n',
    )
    config = load_config(path)
    assert config.model.model == "llama3"
    assert config.provider("local") == ProviderSettings(kind="openai", base_url="http://127.0.0.1:11434/v1")
    assert config.provider_names() == ["anthropic", "local", "offline", "openai"]


def test_m5_config_builtin_providers_need_no_table() -> None:
    config = Config()
    assert config.provider("offline").kind == "offline"
    assert config.provider("openai").api_key_env == "OPENAI_API_KEY"
    assert config.provider("anthropic").kind == "anthropic"


def test_m5_config_model_provider_must_be_defined(tmp_path: Path) -> None:
    path = write_config(tmp_path, '[model]\nprovider = "nowhere"\n')
    with pytest.raises(FileError, match=r"names 'nowhere', which is not defined: add a \[providers\.nowhere\] table"):
        load_config(path)


def test_m5_config_provider_kind_is_checked(tmp_path: Path) -> None:
    path = write_config(tmp_path, '[providers.x]\nkind = "gemini"\n')
    with pytest.raises(FileError, match=r"key 'kind' in \[providers\.x\]: invalid value 'gemini'"):
        load_config(path)


def test_m5_config_provider_names_are_checked(tmp_path: Path) -> None:
    path = write_config(tmp_path, '[providers."My Server"]\nkind = "openai"\n')
    with pytest.raises(FileError, match=r"invalid provider name \[providers\.My Server\]"):
        load_config(path)


@pytest.mark.parametrize("url", ["not a url", "localhost:11434", "ftp://host/v1", "http://", "http://host:port/v1"])
def test_m5_config_base_url_that_is_no_url_is_refused_when_read(tmp_path: Path, url: str) -> None:
    path = write_config(tmp_path, f'[providers.local]\nkind = "openai"\nbase_url = "{url}"\n')
    with pytest.raises(FileError, match=r"base_url in \[providers\.local\] is .*e\.g\. http://localhost:11434/v1"):
        load_config(path)


def test_m5_config_base_url_forms_people_write_are_accepted(tmp_path: Path) -> None:
    for url in (
        "http://localhost:11434",
        "https://openrouter.ai/api/v1",
        "http://[::1]:8080/v1",
        "http://127.0.0.1:80",
    ):
        path = write_config(tmp_path, f'[providers.local]\nkind = "openai"\nbase_url = "{url}"\n')
        assert load_config(path).providers["local"].base_url == url


def test_m6_unknown_enabled_tools_are_refused_when_the_config_is_read(tmp_path: Path) -> None:
    path = write_config(tmp_path, '[tools]\nenabled = ["read_file", "run_script", "shel", "mcp_files_read"]\n')
    with pytest.raises(FileError) as refused:
        load_config(path)
    message = str(refused.value)
    assert "[tools] enabled names unknown tools 'run_script', 'shel', 'mcp_files_read'" in message
    assert "set codemode = true" in message
    assert "read_file, write_file, edit_file, list_dir, shell, web_fetch" in message  # the valid names
    assert str(path) in message
    fine = '[tools]\nenabled = ["shell", "skill", "mcp_files_*"]\n[mcp.servers.files]\ncommand = "x"\n'
    assert load_config(write_config(tmp_path, fine)).tools.enabled == ["shell", "skill", "mcp_files_*"]


def test_m6_the_configs_tool_names_are_the_toolsets() -> None:
    from anyy.profiles.config import TOOL_NAMES
    from anyy.tools.toolset import KNOWN_TOOL_NAMES

    assert TOOL_NAMES == KNOWN_TOOL_NAMES
