"""A profile's settings (``config.toml``): the values a new session starts from (SPEC M1, M3, R3, R4, Q7).

Every table refuses unknown keys, so a typo is an error that names the key rather than a setting silently
ignored. A missing file means every default.
"""

from __future__ import annotations

import fnmatch
import os
from pathlib import Path
from typing import Annotated, Literal

import msgspec

from anyy.domain.durability import Durability
from anyy.domain.pricing import ModelPrice
from anyy.domain.sessions import QueueMode
from anyy.hooks.settings import HookError, HooksSettings
from anyy.hooks.settings import check as check_hooks
from anyy.profiles.names import NAME_RULE, is_valid_name
from anyy.profiles.tomlfile import FileError, convert, read_toml

CONFIG_FILE = "config.toml"

ProviderKind = Literal["openai", "anthropic", "offline"]


class ModelSettings(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """What a new session talks to. ``provider`` names a [providers.NAME] table or a built-in one."""

    provider: str = "offline"
    model: str = "offline"
    effort: str = ""


class ProviderSettings(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """How to reach one provider. The key itself never lives here: ``api_key_env`` names the variable.

    ``models`` are the names offered in selectors; when empty, any model name is accepted (a local
    server's models change as the user pulls them)."""

    kind: ProviderKind
    base_url: str = ""
    api_key_env: str = ""
    models: list[str] = []
    # Whether its models read images (N5); false: a conversation with images gets a clear error, no call.
    images: bool = True


class RetrySettings(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Automatic retries of transient model errors (R3); transport retries are a separate layer."""

    enabled: bool = True
    max_retries: Annotated[int, msgspec.Meta(ge=0, le=20)] = 3


class CompactionSettings(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """When the context grows past ``budget_tokens``, older entries are summarised (R4)."""

    budget_tokens: Annotated[int, msgspec.Meta(gt=0)] = 100_000


class QueueSettings(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """How many pending items each checkpoint takes, per queue (Q7), for new sessions."""

    steering: QueueMode = "one-at-a-time"
    follow_up: QueueMode = "one-at-a-time"


def _default_tools() -> list[str]:
    # web_fetch reaches the network on the model's say-so: off until the user turns it on (M6).
    return ["read_file", "write_file", "shell", "ask_user", "memory"]


class SandboxSettings(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """``shell`` and Codemode in bubblewrap when the machine offers it (N3). ``hide``: more paths tools may
    not see, besides the anyy home and the credentials hidden by default (N7); ``show``: default entries
    taken off (``"~/.ssh"`` for ``git push`` over SSH); both absolute or under ``~/``, ``*`` within a name."""

    enabled: bool = True
    network: bool = False  # programs in the sandbox may use the network
    hide: list[str] = []
    show: list[str] = []

    def __post_init__(self) -> None:
        for setting, entries in (("hide", self.hide), ("show", self.show)):
            for entry in entries:
                if not entry.strip() or "\x00" in entry:
                    raise ValueError(f"[tools.sandbox] {setting}: {entry!r} is not a path")
                if not entry.startswith(("/", "~/")):
                    raise ValueError(
                        f"[tools.sandbox] {setting}: {entry!r} is relative: give an absolute path or one under "
                        "~/ (e.g. '~/.config/tool')"
                    )
                if entry.rstrip("/") in ("", "~"):
                    raise ValueError(
                        f"[tools.sandbox] {setting}: {entry!r} would hide every file: name the folders to hide"
                    )


class WebFetchSettings(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    allow_private: bool = False  # loopback, private and link-local addresses (N3)


ApprovalRule = Literal["allow", "ask", "deny"]

# What ``[tools] enabled`` may name besides MCP tools: the built-in tools (the same names as
# anyy.tools.toolset.KNOWN_TOOL_NAMES, a test checks) and ``skill``. Codemode's run_script is a switch.
TOOL_NAMES = (
    "read_file",
    "write_file",
    "edit_file",
    "list_dir",
    "shell",
    "web_fetch",
    "memory",
    "ask_user",
    "delegate",
)


class ToolSettings(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Tools and Codemode belong to the profile, never to a role (M3)."""

    enabled: list[str] = msgspec.field(default_factory=_default_tools)
    codemode: bool = False
    # Variables handed to programs although their names look secret (the filter withholds *_KEY, ...).
    pass_env: list[str] = []
    sandbox: SandboxSettings = msgspec.field(default_factory=SandboxSettings)
    web_fetch: WebFetchSettings = msgspec.field(default_factory=WebFetchSettings)
    # Per tool: "allow", "ask" or "deny", or a table of patterns to rules (N2); see docs/tools.md.
    approval: dict[str, ApprovalRule | dict[str, ApprovalRule]] = {}


class McpServerSettings(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """One MCP server (N1): a program over stdio (``command``) or a streamable HTTP ``url``."""

    command: str = ""
    args: list[str] = []
    env: dict[str, str] = {}  # added to a short allow-list of the Gateway's variables; never its secrets
    url: str = ""
    headers: dict[str, str] = {}
    include: list[str] = []  # glob patterns of the server's tool names; empty: all
    exclude: list[str] = []
    timeout: Annotated[float, msgspec.Meta(gt=0)] = 60.0  # seconds for one call (and for starting)


class McpSettings(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    servers: dict[str, McpServerSettings] = {}
    # Seconds a turn waits for the servers its tools name to start; then it runs without them, saying so.
    wait: Annotated[float, msgspec.Meta(ge=0, le=600)] = 5.0


class StoreSettings(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Where the profile's sessions live: "" is the profile's own SQLite state.db; a postgresql:// URL a
    PostgreSQL database (SPEC P1). ANYY_STORE_URL, when set, takes precedence. ``lease``: with several
    Gateways on one PostgreSQL store, how long a session stays with a Gateway that stopped renewing it.

    ``durability`` (D10) is what an acknowledged write survives: "process" a crash of the Gateway's
    process; "power" also a power cut (SQLite fsyncs every commit; PostgreSQL commits with
    synchronous_commit = on). See docs/reliability.md."""

    url: str = ""
    lease: Annotated[float, msgspec.Meta(ge=0.5, le=600)] = 3.0  # seconds
    durability: Durability = "process"
    # Seconds a running response waits for a store it cannot reach (a database restarting) before it ends
    # interrupted, its notice naming the store (P7).
    outage_hold: Annotated[float, msgspec.Meta(ge=0, le=3600)] = 30.0


class GatewaySettings(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Limits that keep the Gateway answering when something opens connections and sends nothing (D2)."""

    header_timeout: Annotated[float, msgspec.Meta(gt=0, le=3600)] = 10.0  # seconds to send a request head
    max_connections: Annotated[int, msgspec.Meta(ge=0)] = 0  # 0: from the open-file limit (at most 2048)
    # MiB of objects (uploads, attachments, large bodies) past which /upload refuses more; 0: no quota.
    upload_quota: Annotated[int, msgspec.Meta(ge=0)] = 4096
    # Push services a paired device may subscribe with, beyond the browsers' own (Chrome's, Firefox's,
    # Safari's, Edge's): a host name, or ".example.org" for its subdomains too (a self-hosted push service).
    push_hosts: list[str] = []


class WebhookSettings(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Residents' webhooks (``POST /hooks/NAME``, K3): how many calls a minute each resident's name takes,
    how many wakes may wait in its queue, and whether callers must sign (docs/background.md)."""

    per_minute: Annotated[int, msgspec.Meta(ge=1, le=100_000)] = 60
    max_queued: Annotated[int, msgspec.Meta(ge=1, le=10_000)] = 10
    require_signature: bool = False  # true: a bare secret (Authorization: Bearer) is refused
    max_skew: Annotated[int, msgspec.Meta(ge=1, le=3600)] = 300  # seconds a signed call's timestamp may be off


class BackgroundSettings(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Background work (SPEC K2): how many delegated tasks of one call run at once, and how deep
    delegation nests (1: a delegated task cannot delegate again)."""

    max_children: Annotated[int, msgspec.Meta(ge=1, le=32)] = 3
    max_depth: Annotated[int, msgspec.Meta(ge=0, le=8)] = 1


class WorkspaceSettings(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Where sessions work (SPEC W1). ``default``: the workspace of a session made without one (a
    schedule's run, a resident, an API call that names none); "" is the Gateway's working directory.
    ``roots``: when not empty, every workspace must be one of these folders or under one. ``~`` is the
    home directory in both."""

    default: str = ""
    roots: list[str] = []


class BudgetSettings(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Spending limits in dollars (Y2), checked before every model call; 0 or absent: no limit. ``day`` and
    ``month`` cover the whole profile (UTC days and months); ``session`` each conversation with its
    delegated children; ``schedule`` and ``resident`` each schedule and each resident, per UTC day.
    ``warn_at``: the fraction of a limit at which a warning is sent, once."""

    day: Annotated[float, msgspec.Meta(ge=0)] = 0
    month: Annotated[float, msgspec.Meta(ge=0)] = 0
    session: Annotated[float, msgspec.Meta(ge=0)] = 0
    schedule: Annotated[float, msgspec.Meta(ge=0)] = 0
    resident: Annotated[float, msgspec.Meta(ge=0)] = 0
    warn_at: Annotated[float, msgspec.Meta(gt=0, le=1)] = 0.8


class Config(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    model: ModelSettings = msgspec.field(default_factory=ModelSettings)
    providers: dict[str, ProviderSettings] = {}
    retries: RetrySettings = msgspec.field(default_factory=RetrySettings)
    compaction: CompactionSettings = msgspec.field(default_factory=CompactionSettings)
    queue: QueueSettings = msgspec.field(default_factory=QueueSettings)
    tools: ToolSettings = msgspec.field(default_factory=ToolSettings)
    store: StoreSettings = msgspec.field(default_factory=StoreSettings)
    mcp: McpSettings = msgspec.field(default_factory=McpSettings)
    gateway: GatewaySettings = msgspec.field(default_factory=GatewaySettings)
    background: BackgroundSettings = msgspec.field(default_factory=BackgroundSettings)
    webhooks: WebhookSettings = msgspec.field(default_factory=WebhookSettings)
    hooks: HooksSettings = msgspec.field(default_factory=HooksSettings)  # the user's own commands (N6)
    workspaces: WorkspaceSettings = msgspec.field(default_factory=WorkspaceSettings)
    # Virtual models: a name for a "provider/model" pair, selected with provider = "alias" (SPEC M2).
    aliases: dict[str, str] = {}
    # Prices per million tokens that replace the price table's (Y1): "provider/model" or "provider" keys.
    prices: dict[str, ModelPrice] = {}
    budgets: BudgetSettings = msgspec.field(default_factory=BudgetSettings)  # spending limits (Y2)

    def provider(self, name: str) -> ProviderSettings:
        """The settings of a provider by name: a [providers.NAME] table, else a built-in one."""
        found = self.providers.get(name) or BUILTIN_PROVIDERS.get(name)
        if found is None:
            raise KeyError(name)
        return found

    def provider_names(self) -> list[str]:
        return sorted({*BUILTIN_PROVIDERS, *self.providers})


# The provider name under which a session selects a virtual model ([aliases]); no table may take it.
VIRTUAL_PROVIDER = "alias"

# Usable without any [providers] table; a table of the same name replaces one of these.
BUILTIN_PROVIDERS: dict[str, ProviderSettings] = {
    "offline": ProviderSettings(kind="offline", models=["offline"]),
    "openai": ProviderSettings(kind="openai", base_url="https://api.openai.com/v1", api_key_env="OPENAI_API_KEY"),
    "anthropic": ProviderSettings(
        kind="anthropic", base_url="https://api.anthropic.com", api_key_env="ANTHROPIC_API_KEY"
    ),
}


STORE_URL_ENV = "ANYY_STORE_URL"


def store_url(config: Config, config_path: Path) -> tuple[str, str]:
    """The store URL in force for a profile ("" for its SQLite state.db) and the setting it comes from."""
    from_env = os.environ.get(STORE_URL_ENV, "").strip()
    if from_env:
        return from_env, STORE_URL_ENV
    return config.store.url.strip(), f"[store] url in {CONFIG_FILE} ({config_path})"


def load_config(path: Path) -> Config:
    """The settings in ``path``; every default when the file does not exist."""
    if not path.exists():
        return Config()
    raw = read_toml(path, CONFIG_FILE)
    # Each provider table is checked on its own so that a message names it: msgspec would only say
    # "providers[...]".
    providers = raw.get("providers")
    if isinstance(providers, dict):
        for name, table in providers.items():
            if not is_valid_name(name):
                raise FileError(f"{CONFIG_FILE} ({path}): invalid provider name [providers.{name}]: use {NAME_RULE}")
            convert(table, ProviderSettings, label=CONFIG_FILE, path=path, prefix=("providers", name), root=Config)
    config = convert(raw, Config, label=CONFIG_FILE, path=path)
    where = f"{CONFIG_FILE} ({path})"
    _check_mcp(config, where)
    _check_base_urls(config, where)
    _check_tools(config, where)
    try:
        check_hooks(config.hooks)
    except HookError as exc:
        raise FileError(f"{where}: {exc}") from None
    if VIRTUAL_PROVIDER in config.providers:
        raise FileError(f"{where}: [providers.{VIRTUAL_PROVIDER}] is reserved for [aliases]: rename the table")
    for alias, target in config.aliases.items():
        _check_alias(config, alias, target, where)
    if config.model.provider == VIRTUAL_PROVIDER:
        if config.model.model not in config.aliases:
            known = ", ".join(sorted(config.aliases)) or "none defined"
            raise FileError(
                f"{where}: [model] selects the alias {config.model.model!r}, which [aliases] does not define "
                f"(aliases: {known})"
            )
        return config
    try:
        config.provider(config.model.provider)
    except KeyError:
        raise FileError(
            f"{where}: key 'provider' in [model] names {config.model.provider!r}, which is not "
            f"defined: add a [providers.{config.model.provider}] table or use one of: "
            f"{', '.join(config.provider_names())}"
        ) from None
    return config


def _check_mcp(config: Config, where: str) -> None:
    for name, server in config.mcp.servers.items():
        if not is_valid_name(name) or "_" in name:
            raise FileError(f"{where}: invalid MCP server name [mcp.servers.{name}]: use {NAME_RULE}, without '_'")
        if bool(server.command) == bool(server.url):
            raise FileError(
                f"{where}: [mcp.servers.{name}] needs exactly one of 'command' (a program spoken to over stdio) "
                "or 'url' (a streamable HTTP endpoint)"
            )
        if server.url and not server.url.startswith(("http://", "https://")):
            raise FileError(
                f"{where}: [mcp.servers.{name}] url must start with http:// or https://, not {server.url!r}"
            )


def _check_base_urls(config: Config, where: str) -> None:
    """A ``base_url`` that is no URL is refused here, not retried as an outage at every turn."""
    from urllib.parse import urlsplit

    for name, provider in config.providers.items():
        url = provider.base_url.strip()
        if not url:
            continue
        try:
            parts = urlsplit(url)
            parts.port  # noqa: B018 - raises on a port that is not a number
        except ValueError as exc:
            problem = str(exc)
        else:
            problem = "" if parts.scheme in ("http", "https") and parts.hostname else "not an http(s) URL"
        if problem:
            raise FileError(
                f"{where}: base_url in [providers.{name}] is {url!r}: {problem}; write the server's address, e.g. "
                "http://localhost:11434/v1 or https://api.openai.com/v1"
            )


def _check_tools(config: Config, where: str) -> None:
    """Every name of ``[tools] enabled`` is a tool: refused here, once, rather than failing every turn."""
    servers = list(config.mcp.servers)
    unknown = [
        name
        for name in dict.fromkeys(config.tools.enabled)
        if name not in TOOL_NAMES
        and name != "skill"
        and not (
            name.startswith("mcp_")
            and any(fnmatch.fnmatchcase(f"mcp_{server}_", name[: len(server) + 5]) for server in servers)
        )
    ]
    if not unknown:
        return
    codemode = " (run_script is not enabled by name: set codemode = true)" if "run_script" in unknown else ""
    mcp = f"mcp_<server>_<tool> of a server in [mcp.servers] ({', '.join(servers) or 'none configured'})"
    raise FileError(
        f"{where}: [tools] enabled names {'unknown tools' if len(unknown) > 1 else 'an unknown tool'} "
        f"{', '.join(map(repr, unknown))}{codemode}; the tools are: {', '.join(TOOL_NAMES)}, skill, and {mcp}"
    )


def _check_alias(config: Config, alias: str, target: str, where: str) -> None:
    if not is_valid_name(alias):
        raise FileError(f"{where}: invalid alias name {alias!r} in [aliases]: use {NAME_RULE}")
    provider, slash, model = target.partition("/")
    if not slash or not model:
        raise FileError(f'{where}: alias {alias!r} in [aliases] must be "provider/model", not {target!r}')
    try:
        config.provider(provider)
    except KeyError:
        raise FileError(
            f"{where}: alias {alias!r} in [aliases] names the provider {provider!r}, which is not defined "
            f"(providers: {', '.join(config.provider_names())})"
        ) from None


DEFAULT_CONFIG_TOML = """\
# anyy profile settings. Every key is optional: a missing key keeps the default shown here.
# Unknown keys are refused (a typo is reported, never silently ignored).
# These values initialise NEW sessions; a session keeps its own settings once created (SPEC M1, X4).

[model]
# A name from [providers.NAME] below, or a built-in one: offline, openai, anthropic;
# or "alias" with model = a name from [aliases].
provider = "offline"
model = "offline"
# Reasoning effort passed to the provider; "" leaves the provider's default.
effort = ""

# Providers are named tables. kind is "openai" (any OpenAI-compatible server: OpenAI, Ollama,
# vLLM, llama.cpp, OpenRouter...), "anthropic" or "offline" (deterministic, for demos and tests).
# The API key is never written here: api_key_env names the environment variable that holds it.
#
# models lists the names offered in selectors; left empty, any model name is accepted.
#
# [providers.local]
# kind = "openai"
# base_url = "http://127.0.0.1:11434/v1"
# api_key_env = ""
# models = ["llama3.2", "qwen2.5-coder"]

[aliases]
# Virtual models: a short name for "provider/model", selected with provider = "alias".
# A session whose alias is later removed goes on with the model of its last response.
# fast = "openai/gpt-4o-mini"

[retries]
# Transient model errors (rate limit, overload, 5xx, dropped connection) are retried automatically,
# waiting 2 s, then doubling, at most 60 s. Transport retries and HTTP timeouts stay on regardless.
enabled = true
max_retries = 3

[compaction]
# When the context re-read by the model grows past this many tokens, older entries are summarised.
budget_tokens = 100000

[queue]
# Pending messages taken at each checkpoint: "all" or "one-at-a-time", per queue.
steering = "one-at-a-time"
follow_up = "one-at-a-time"

[tools]
# Tools enabled in new sessions (web_fetch is off unless listed). Roles never choose tools.
enabled = ["read_file", "write_file", "shell", "ask_user", "memory"]
# Codemode: the model writes one script calling the tools instead of one call per tool.
codemode = false

# Variables handed to shell and Codemode although their names look like secrets (*_KEY, *_TOKEN...).
pass_env = []

# shell and Codemode run in bubblewrap when it works here: the working directory writable, the rest
# read-only, a private /tmp, no capabilities, and no network unless network = true. The anyy home and
# credentials (~/.ssh, ~/.aws, ~/.netrc...) are hidden from every tool; hide adds paths, show takes
# default ones off the list (docs/tools.md).
# [tools.sandbox]
# enabled = true
# network = false
# hide = ["~/secrets", "/srv/keys"]
# show = ["~/.ssh"]

# web_fetch reaches public addresses only; allow_private = true also allows loopback, private and
# link-local ones.
# [tools.web_fetch]
# allow_private = false

# Per tool: "allow", "ask" (the execution waits for your answer) or "deny"; or patterns (docs/tools.md).
# [tools.approval]
# shell = { "git status*" = "allow", "rm *" = "deny", "*" = "ask" }
# write_file = "ask"

# MCP servers: their tools are named mcp_<server>_<tool> (docs/tools.md).
# [mcp.servers.files]
# command = "npx"
# args = ["-y", "@modelcontextprotocol/server-filesystem", "/home/me/notes"]
# [mcp.servers.search]
# url = "http://127.0.0.1:8931/mcp"
# headers = { Authorization = "Bearer ..." }
# Servers start in the background; a turn waits this many seconds for the servers its tools name,
# then runs without the missing ones and says which.
# [mcp]
# wait = 5.0

# Hooks: your own commands run before and after tool calls (pre_tool may allow, deny or ask), when a
# session starts, when a message is taken and when a response ends. A hook runs only once you trusted
# its exact content with `anyy hooks trust` (docs/tools.md, "Hooks").
# [[hooks.pre_tool]]
# command = ["/home/me/.config/anyy/guard.py"]
# matcher = "shell"
# timeout = 10

[background]
# The delegate tool (when enabled): how many of one call's tasks run at once, and how deep delegation
# nests (1: a delegated task cannot delegate again; 0: no delegation).
max_children = 3
max_depth = 1

[workspaces]
# A session works in its workspace: the folder `anyy chat` and the TUI were started in (or --cwd DIR).
# default: the workspace of a session made without one (schedules, residents, API calls naming none);
# "" is the Gateway's working directory. roots: when set, every workspace must be under one of them.
default = ""
roots = []

# Residents' webhooks (POST /hooks/NAME; docs/background.md): calls a minute per name, wakes that may wait
# in a resident's queue, and whether callers must sign (X-Anyy-Timestamp, X-Anyy-Signature).
# [webhooks]
# per_minute = 60
# max_queued = 10
# require_signature = false
# max_skew = 300

# MiB of stored objects (uploads, attachments, large bodies) past which /upload refuses files; 0: no quota.
# Push services a paired device may subscribe with, beyond the browsers' own (docs/remote.md).
# [gateway]
# upload_quota = 4096
# push_hosts = []

[store]
# Where sessions live: "" keeps them in this profile's state.db (SQLite). A PostgreSQL URL
# ("postgresql://user@host:5432/anyy") puts them in that database; `anyy store copy --to URL` copies
# the sessions there first. The environment variable ANYY_STORE_URL overrides this key.
url = ""
# What a write the Gateway acknowledged survives: "process" (a crash or kill of the Gateway; a power cut
# may lose the last moments of work, never corrupting anything) or "power" (also a power cut; SQLite
# syncs the disk at every commit: about 9x fewer appends per second). See docs/reliability.md.
durability = "process"
# With several Gateways on one PostgreSQL store: seconds after which the sessions of a Gateway that
# stopped renewing them are taken over (docs/scaling.md).
# lease = 3.0
# Seconds a running response waits for a store it cannot reach (a database restarting, a lost connection)
# before it ends interrupted, saying so (docs/reliability.md).
# outage_hold = 30.0
"""
