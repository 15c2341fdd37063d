"""What a profile allows tools to do, beyond which tools are enabled (SPEC N3): handed to every tool call.

The runtime builds one :class:`ToolPolicy` from ``config.toml`` (and the machine's sandbox) and passes it
in :class:`anyy.tools.base.ToolContext`. The default is the safe one: no private addresses for
``web_fetch``, no sandbox claimed.
"""

from __future__ import annotations

import msgspec

from anyy.tools.approval_rules import ApprovalRules
from anyy.tools.sandbox import Sandbox


class ToolPolicy(msgspec.Struct, frozen=True, kw_only=True):
    # web_fetch may reach loopback, private and link-local addresses ([tools.web_fetch] allow_private).
    allow_private_network: bool = False
    sandbox: Sandbox = msgspec.field(default_factory=Sandbox)
    approval: ApprovalRules = msgspec.field(default_factory=ApprovalRules)  # [tools.approval] (N2)
