"""Text for people: one line per session, entry or search hit, and the indented tree."""

from __future__ import annotations

from collections.abc import Iterator

from anyy.api.sessions import DelegatedTask
from anyy.cli.output import when
from anyy.client.workspace import shown
from anyy.domain.entries import Entry
from anyy.domain.search import SearchHit
from anyy.domain.sessions import Origin, Session, activity_words
from anyy.domain.tree import TreeView, preview

HEAD_MARK = "<- head"


def model_of(session: Session) -> str:
    return "/".join(part for part in (session.provider, session.model) if part) or "(profile default)"


def session_line(session: Session) -> str:
    title = preview(session.title) or "(untitled)"
    last = f" — {session.preview}" if session.preview else ""
    origin = f"  [{origin_text(session.origin)}]" if session.origin is not None else ""
    doing = f"  <{activity_words(session.activity)}>" if session.activity is not None else ""
    return (
        f"{session.id}  {session.kind:<10}  {when(session.updated_at)}  {session.role:<12}  "
        f"{model_of(session):<24}  {shown(session.workspace)}  {title}{last}{origin}{doing}"
    )


def task_line(task: DelegatedTask) -> str:
    """One delegated task of a parent (K2, K4): its child session, state, brief, and answer or failure."""
    result = f" — {'failed: ' if task.is_error else ''}{preview(task.result)}" if task.result else ""
    return f"{task.child_session_id}  {task.state:<9}  {preview(task.brief)}{result}"


def origin_text(origin: Origin) -> str:
    """What started a Background session (K4), in a few words."""
    if origin.kind == "schedule":
        return f"schedule {origin.name!r} run for {when(origin.scheduled_for or 0.0, zone=True)}"
    if origin.kind == "delegate":
        return f"delegated by {origin.parent_session_id}"
    if origin.kind == "import":
        return f"imported from {(origin.source or '').replace(':', ': ', 1)}"
    return f"resident {origin.name or origin.resident_id}"


def session_details(session: Session) -> Iterator[str]:
    yield f"session   {session.id} ({session.kind})"
    yield f"title     {session.title or '(untitled)'}"
    yield f"role      {session.role}"
    effort = f", effort {session.effort}" if session.effort else ""
    yield f"model     {model_of(session)}{effort}"
    yield f"workspace {shown(session.workspace)}"
    tools = ", ".join(f"{name}={value}" for name, value in sorted(session.tools.items()))
    yield f"tools     {tools or '(profile default)'}"
    yield f"queues    steering {session.steering_mode}, follow-up {session.follow_up_mode}"
    if session.goal is not None:
        yield f"goal      {session.goal.text} ({session.goal.state})"
    if session.forked_from:
        yield f"forked    from {session.forked_from}"
    if session.origin is not None:
        yield f"origin    {origin_text(session.origin)}"
    yield f"head      {session.head if session.head is not None else '(no entries)'}"
    yield f"created   {when(session.created_at)}"
    yield f"updated   {when(session.updated_at)}"


def entry_line(entry: Entry) -> str:
    return f"[{entry.id}] {entry.kind.label}: {preview(entry.text)}"


def hit_line(hit: SearchHit) -> str:
    title = preview(hit.session_title) or "(untitled)"
    return f"{hit.session_id}  [{hit.entry_id}] {hit.kind:<9}  {title}: {preview(hit.snippet)}"


def tree_lines(view: TreeView) -> Iterator[str]:
    """The tree, depth-first. ``+`` starts a branch; ``*`` in the first column marks the current path.

    The store's depth grows only where the tree branches, so a long conversation stays at one level and
    only its alternatives are indented. Several roots (the head was moved before the first entry and the
    conversation restarted) are branches too.
    """
    children = {node.id: node.children for node in view.nodes}
    roots = [node for node in view.nodes if node.parent not in children]
    base = "  " if len(roots) > 1 else ""
    for node in view.nodes:
        path_mark = "*" if node.on_path else " "
        if node.parent not in children:
            indent = "+ " if base else ""
        elif children[node.parent] > 1 and node.depth > 0:
            indent = base + "  " * (node.depth - 1) + "+ "
        else:
            indent = base + "  " * node.depth
        label = f"  [{node.label}]" if node.label else ""
        head = f"  {HEAD_MARK}" if node.is_head else ""
        yield f"{path_mark} {indent}{node.id} {node.kind}: {node.preview}{label}{head}"
