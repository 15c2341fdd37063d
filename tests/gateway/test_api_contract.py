"""The wire contract (G2): ``anyy.api`` names every method the Gateway serves, with its parameters and
result type; its entry payloads and records mirror what the sessions keep; it is the lowest layer."""

from __future__ import annotations

import json
import subprocess
import sys

import msgspec
import pytest

from anyy import api
from anyy.api import entries as wire_entries
from anyy.api import sessions as wire
from anyy.domain import entries, queue, sessions, tree
from anyy.domain.entries import DATA_TYPES
from anyy.gateway.methods import TABLE


def _fields(cls: type[msgspec.Struct]) -> list[tuple[str, object]]:
    found = []
    for field in msgspec.structs.fields(cls):
        default = field.default if field.default is not msgspec.NODEFAULT else field.default_factory
        if default is not msgspec.NODEFAULT and callable(default) and not isinstance(default, msgspec.Struct):
            default = default()
        found.append((field.name, default))
    return found


def test_g2_the_gateway_serves_exactly_the_methods_of_the_contract() -> None:
    assert set(TABLE.methods) == set(api.METHODS)
    for name, method in TABLE.methods.items():
        assert method.spec is api.METHODS[name]


@pytest.mark.parametrize("kind", list(DATA_TYPES), ids=lambda kind: kind.label)
def test_g2_each_entry_payload_of_the_contract_mirrors_the_kept_one(kind: entries.EntryKind) -> None:
    kept = DATA_TYPES[kind]
    shown = wire_entries.DATA_BY_KIND[kind.label]
    assert _fields(shown) == _fields(kept)
    assert shown.__struct_config__.tag == kind.label


@pytest.mark.parametrize(
    ("kept", "shown"),
    [
        (sessions.Session, wire.Session),
        (sessions.Goal, wire.Goal),
        (queue.Submission, wire.Submission),
        (queue.Execution, wire.Execution),
        (entries.Attachment, wire_entries.Attachment),
        (entries.Usage, wire_entries.Usage),
        (entries.InnerCall, wire_entries.InnerCall),
        (entries.Reasoning, wire_entries.Reasoning),
        (tree.TreeNode, wire.TreeNode),
        (tree.TreeView, wire.TreeView),
    ],
    ids=lambda cls: cls.__name__,
)
def test_g2_the_records_of_the_contract_mirror_the_kept_ones(
    kept: type[msgspec.Struct], shown: type[msgspec.Struct]
) -> None:
    told = WIRE_ONLY.get(shown, set())
    assert [name for name, _ in _fields(shown) if name not in told] == [name for name, _ in _fields(kept)]


# What the Gateway tells beside a stored record, named here so that nothing else slips in unnoticed.
WIRE_ONLY: dict[type[msgspec.Struct], set[str]] = {
    wire.Submission: {"blocked"},  # the end of its execution waits to be written (D1): the actor's, not stored
}


def test_g2_the_contract_is_the_lowest_layer_it_loads_nothing_else_of_anyy() -> None:
    code = (
        "import json, sys, anyy.api; "
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith(('anyy', 'commons', 'ameesh')))))"
    )
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert all(name == "anyy" or name.startswith("anyy.api") for name in json.loads(loaded)), loaded
