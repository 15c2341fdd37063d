"""The tree view of a session: every branch it can reach, its labels, and where the head is."""

from __future__ import annotations

from collections.abc import Iterable

import msgspec

from anyy.domain.entries import EntryKind, LabelData

# id, parent, kind, text preview, data (labels only)
TreeRow = tuple[int, int | None, int, str | None, str | None]

PREVIEW_CHARS = 120


class TreeNode(msgspec.Struct, kw_only=True):
    id: int
    parent: int | None
    kind: str
    preview: str
    label: str | None
    depth: int  # indentation: grows only where the tree branches
    children: int
    on_path: bool  # between the root and the head
    is_head: bool


class TreeView(msgspec.Struct, kw_only=True):
    head: int | None
    nodes: list[TreeNode]  # depth-first, oldest child first
    labels: dict[int, str]


def preview(text: str | None) -> str:
    flat = " ".join((text or "").split())
    return flat if len(flat) <= PREVIEW_CHARS else flat[: PREVIEW_CHARS - 1] + "…"


def current_labels(label_rows: Iterable[tuple[int, str | None, str | None]]) -> dict[int, str]:
    """``(label entry id, text, data)`` in path order → target id → label. An empty text removes it."""
    labels: dict[int, str] = {}
    for _entry_id, text, data in label_rows:
        if not data:
            continue
        target = msgspec.json.decode(data, type=LabelData).target
        if text:
            labels[target] = text
        else:
            labels.pop(target, None)
    return labels


def build_tree(rows: list[TreeRow], head: int | None, path: set[int]) -> TreeView:
    by_id = {row[0]: row for row in rows}
    children: dict[int | None, list[int]] = {}
    roots: list[int] = []
    for entry_id, parent, *_ in rows:
        if parent is None or parent not in by_id:
            roots.append(entry_id)
        else:
            children.setdefault(parent, []).append(entry_id)
    for kids in children.values():
        kids.sort()
    label_rows = sorted(
        ((r[0], r[3], r[4]) for r in rows if r[2] == EntryKind.LABEL),
        key=lambda r: (r[0] in path, r[0]),  # labels on the current path are applied last: they win
    )
    labels = current_labels(label_rows)
    nodes: list[TreeNode] = []
    stack: list[tuple[int, int]] = [(root, 0) for root in sorted(roots, reverse=True)]
    while stack:
        entry_id, depth = stack.pop()
        _, parent, kind, text, _data = by_id[entry_id]
        kids = children.get(entry_id, [])
        nodes.append(
            TreeNode(
                id=entry_id,
                parent=parent,
                kind=EntryKind(kind).label,
                preview=preview(text),
                label=labels.get(entry_id),
                depth=depth,
                children=len(kids),
                on_path=entry_id in path,
                is_head=entry_id == head,
            )
        )
        child_depth = depth + 1 if len(kids) > 1 else depth
        stack.extend((kid, child_depth) for kid in reversed(kids))
    return TreeView(head=head, nodes=nodes, labels=labels)
