"""``anyy sessions list|show|tree|search|export``: reading a profile's sessions (SPEC A1, B1, T1, X1)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NamedTuple

import pytest

from anyy.cli import session_reads
from anyy.domain.entries import AssistantData, EntryKind, LabelData, NewEntry
from anyy.domain.sessions import NewSession
from anyy.profiles import Profile
from anyy.profiles.gateway_address import Address, write_address
from tests.cli.conftest import MakeProfile, OpenStore, Run
from tests.cli.live import GatewayProcess
from tests.cli.live import run as live_run


class Tree(NamedTuple):
    session: str
    fork: str
    ids: dict[str, int]  # name → entry id


def user(text: str) -> NewEntry:
    return NewEntry(kind=EntryKind.USER, text=text)


def assistant(text: str) -> NewEntry:
    return NewEntry(kind=EntryKind.ASSISTANT, text=text, data=AssistantData(provider="offline", model="offline"))


@pytest.fixture
def profile(make_profile: MakeProfile) -> Profile:
    return make_profile("default")


@pytest.fixture
def tree(profile: Profile, open_store: OpenStore) -> Tree:
    """hello → hi → label(start) ─┬─ branch a → answer a
                                   └─ branch b (head)
    and a fork at the label, with one question of its own."""
    with open_store(profile) as store:
        sid = store.create_session(NewSession(title="Tea planning", provider="offline", model="offline")).id
        hello, hi = store.append_entries(sid, [user("hello teapot"), assistant("hi there")])
        (label,) = store.append_entries(
            sid, [NewEntry(kind=EntryKind.LABEL, text="start", data=LabelData(target=hello.id))]
        )
        branch_a, answer_a = store.append_entries(sid, [user("branch a oolong"), assistant("answer a")])
        store.set_head(sid, label.id)
        (branch_b,) = store.append_entries(sid, [user("branch b sencha")])
        fork = store.fork_session(sid, at=label.id, title="Tea fork")
        (forked,) = store.append_entries(fork.id, [user("forked matcha question")])
    ids = {
        "hello": hello.id,
        "hi": hi.id,
        "label": label.id,
        "branch_a": branch_a.id,
        "answer_a": answer_a.id,
        "branch_b": branch_b.id,
        "forked": forked.id,
    }
    return Tree(session=sid, fork=fork.id, ids=ids)


# -- list --------------------------------------------------------------------------------------------


def test_b1_sessions_list_pages_with_cursor(anyy: Run, profile: Profile, open_store: OpenStore) -> None:
    with open_store(profile) as store:
        created = {store.create_session(NewSession(title=f"s{i}")).id for i in range(5)}
    seen: list[str] = []
    cursor: str | None = None
    pages = 0
    while True:
        args = ["sessions", "list", "--limit", "2", "--json"] + (["--cursor", cursor] if cursor else [])
        page = json.loads(anyy(*args).stdout)
        seen += [item["id"] for item in page["items"]]
        pages += 1
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert pages == 3
    assert len(seen) == 5
    assert set(seen) == created


def test_b1_sessions_list_text_gives_the_next_page_command(anyy: Run, profile: Profile, open_store: OpenStore) -> None:
    with open_store(profile) as store:
        for i in range(3):
            store.create_session(NewSession(title=f"title {i}"))
    result = anyy("sessions", "list", "--limit", "2")
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert len(lines) == 2
    assert all(line.startswith("ses_") for line in lines)
    hint = result.stderr.strip()
    assert hint.startswith("more: anyy sessions list --profile default --limit 2 --cursor ")
    rest = anyy(*hint.removeprefix("more: anyy ").split())
    assert len(rest.stdout.splitlines()) == 1
    assert rest.stderr == ""


def test_b1_sessions_list_filters_by_kind(anyy: Run, profile: Profile, open_store: OpenStore) -> None:
    with open_store(profile) as store:
        chat = store.create_session(NewSession(kind="chat", title="talk")).id
        background = store.create_session(NewSession(kind="background", title="nightly")).id
    chats = json.loads(anyy("sessions", "list", "--kind", "chat", "--json").stdout)["items"]
    assert [s["id"] for s in chats] == [chat]
    out = anyy("sessions", "list", "--kind", "background").stdout
    assert background in out
    assert "nightly" in out
    assert chat not in out


def test_b1_sessions_list_rejects_an_unknown_kind(anyy: Run, profile: Profile) -> None:
    result = anyy("sessions", "list", "--kind", "other")
    assert result.exit_code == 2
    assert "'chat'" in result.stderr


def test_b1_sessions_list_bad_cursor_is_a_clear_error(anyy: Run, profile: Profile) -> None:
    result = anyy("sessions", "list", "--cursor", "garbage!")
    assert result.exit_code == 1
    assert result.stderr.startswith("error: invalid page cursor")


def test_b1_sessions_list_empty(anyy: Run, profile: Profile) -> None:
    result = anyy("sessions", "list")
    assert result.exit_code == 0
    assert result.stdout == ""
    assert "no sessions in profile 'default'" in result.stderr


# -- show --------------------------------------------------------------------------------------------


def test_a2_sessions_show_settings_and_last_entries(anyy: Run, tree: Tree) -> None:
    result = anyy("sessions", "show", tree.session)
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert f"session   {tree.session} (chat)" in out
    assert "title     Tea planning" in out
    assert "role      default" in out
    assert "model     offline/offline" in out
    assert f"head      {tree.ids['branch_b']}" in out
    entries = [line.strip() for line in out.splitlines() if line.startswith("  [")]
    assert entries == [
        f"[{tree.ids['hello']}] user: hello teapot",
        f"[{tree.ids['hi']}] assistant: hi there",
        f"[{tree.ids['label']}] label: start",
        f"[{tree.ids['branch_b']}] user: branch b sencha",
    ]
    assert "branch a" not in out  # another branch, not the current path


def test_a2_sessions_show_json_limits_entries(anyy: Run, tree: Tree) -> None:
    shown = json.loads(anyy("sessions", "show", tree.session, "--entries", "2", "--json").stdout)
    assert shown["session"]["id"] == tree.session
    assert shown["session"]["head"] == tree.ids["branch_b"]
    assert [e["id"] for e in shown["entries"]] == [tree.ids["label"], tree.ids["branch_b"]]
    assert [e["kind"] for e in shown["entries"]] == ["label", "user"]
    assert shown["earlier"] is True


def test_a2_sessions_show_of_an_empty_session(anyy: Run, profile: Profile, open_store: OpenStore) -> None:
    with open_store(profile) as store:
        sid = store.create_session(NewSession()).id
    result = anyy("sessions", "show", sid)
    assert result.exit_code == 0
    assert "no entries yet" in result.stdout
    assert json.loads(anyy("sessions", "show", sid, "--json").stdout)["entries"] == []


# -- tree --------------------------------------------------------------------------------------------


def test_t1_sessions_tree_shows_branches_labels_and_head(anyy: Run, tree: Tree) -> None:
    result = anyy("sessions", "tree", tree.session)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    ids = tree.ids
    assert lines == [
        f"* {ids['hello']} user: hello teapot  [start]",
        f"* {ids['hi']} assistant: hi there",
        f"* {ids['label']} label: start",
        f"  + {ids['branch_a']} user: branch a oolong",
        f"    {ids['answer_a']} assistant: answer a",
        f"* + {ids['branch_b']} user: branch b sencha  <- head",
    ]


def test_f1_sessions_tree_of_a_fork_keeps_the_path_and_its_labels(anyy: Run, tree: Tree) -> None:
    lines = anyy("sessions", "tree", tree.fork).stdout.splitlines()
    assert lines[0] == f"* {tree.ids['hello']} user: hello teapot  [start]"
    assert lines[-1] == f"* {tree.ids['forked']} user: forked matcha question  <- head"
    assert not any("branch" in line for line in lines)


def test_t1_sessions_tree_json(anyy: Run, tree: Tree) -> None:
    view = json.loads(anyy("sessions", "tree", tree.session, "--json").stdout)
    assert view["head"] == tree.ids["branch_b"]
    assert view["labels"] == {str(tree.ids["hello"]): "start"}
    nodes = {node["id"]: node for node in view["nodes"]}
    assert set(nodes) == set(tree.ids.values()) - {tree.ids["forked"]}
    assert nodes[tree.ids["branch_b"]]["is_head"] is True
    assert nodes[tree.ids["branch_a"]]["on_path"] is False
    assert nodes[tree.ids["label"]]["children"] == 2


def test_t1_sessions_tree_of_an_empty_session(anyy: Run, profile: Profile, open_store: OpenStore) -> None:
    with open_store(profile) as store:
        sid = store.create_session(NewSession()).id
    assert anyy("sessions", "tree", sid).stdout == f"session {sid} has no entries yet\n"


# -- search ------------------------------------------------------------------------------------------


def test_b1_sessions_search_finds_messages(anyy: Run, tree: Tree) -> None:
    result = anyy("sessions", "search", "oolong")
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith(f"{tree.session}  [{tree.ids['branch_a']}] user")
    assert "Tea planning: branch a [oolong]" in result.stdout

    hits = json.loads(anyy("sessions", "search", "matcha", "--json").stdout)
    assert [(h["session_id"], h["entry_id"]) for h in hits] == [(tree.fork, tree.ids["forked"])]


def test_b1_sessions_search_filters(anyy: Run, tree: Tree, profile: Profile, open_store: OpenStore) -> None:
    with open_store(profile) as store:
        bg = store.create_session(NewSession(kind="background", title="nightly")).id
        store.append_entries(bg, [user("teapot inventory")])
    every = json.loads(anyy("sessions", "search", "teapot", "--json").stdout)
    assert {h["session_id"] for h in every} == {tree.session, bg}
    background = json.loads(anyy("sessions", "search", "teapot", "--kind", "background", "--json").stdout)
    assert [h["session_id"] for h in background] == [bg]
    own = json.loads(anyy("sessions", "search", "teapot", "--session", tree.session, "--json").stdout)
    assert [h["entry_id"] for h in own] == [tree.ids["hello"]]
    limited = json.loads(anyy("sessions", "search", "teapot", "--limit", "1", "--json").stdout)
    assert len(limited) == 1


def test_b1_sessions_search_without_hits(anyy: Run, tree: Tree) -> None:
    result = anyy("sessions", "search", "espresso")
    assert result.exit_code == 0
    assert result.stdout == ""
    assert "nothing matches 'espresso'" in result.stderr


def test_b1_sessions_search_needs_a_word(anyy: Run, tree: Tree) -> None:
    result = anyy("sessions", "search", "!!")
    assert result.exit_code == 1
    assert result.stderr == "error: the search needs at least one word\n"


# -- export ------------------------------------------------------------------------------------------


def test_a2_sessions_export_jsonl_holds_the_whole_tree(anyy: Run, tree: Tree) -> None:
    result = anyy("sessions", "export", tree.session)
    assert result.exit_code == 0, result.output
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert records[0]["type"] == "session"
    assert records[0]["session"]["id"] == tree.session
    entries = [r["entry"] for r in records[1:]]
    assert all(r["type"] == "entry" for r in records[1:])
    expected = set(tree.ids.values()) - {tree.ids["forked"]}
    assert {e["id"] for e in entries} == expected
    assert len(entries) == len(expected)
    position = {e["id"]: i for i, e in enumerate(entries)}
    for entry in entries:  # parents come before their children
        if entry["parent"] is not None:
            assert position[entry["parent"]] < position[entry["id"]]
    by_id = {e["id"]: e for e in entries}
    assert by_id[tree.ids["answer_a"]]["text"] == "answer a"
    assert by_id[tree.ids["answer_a"]]["kind"] == "assistant"
    assert by_id[tree.ids["label"]]["data"] == {"target": tree.ids["hello"]}


def test_f1_sessions_export_jsonl_of_a_fork_includes_the_inherited_path(anyy: Run, tree: Tree) -> None:
    records = [json.loads(line) for line in anyy("sessions", "export", tree.fork).stdout.splitlines()]
    ids = [r["entry"]["id"] for r in records[1:]]
    assert ids == [tree.ids["hello"], tree.ids["hi"], tree.ids["label"], tree.ids["forked"]]


def test_a2_sessions_export_markdown_follows_the_current_path(anyy: Run, tree: Tree) -> None:
    result = anyy("sessions", "export", tree.session, "--format", "markdown")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert out.startswith("# Tea planning\n\n")
    assert "## User\n\nhello teapot\n" in out
    assert "## Assistant\n\nhi there\n" in out
    assert "branch b sencha" in out
    assert "branch a" not in out


def test_a2_sessions_export_to_a_file(anyy: Run, tree: Tree, tmp_path: Path) -> None:
    target = tmp_path / "out.jsonl"
    result = anyy("sessions", "export", tree.session, "-o", str(target))
    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    assert f"to {target}" in result.stderr
    lines = target.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 1 + 6
    for line in lines:
        json.loads(line)
    markdown = tmp_path / "out.md"
    anyy("sessions", "export", tree.session, "--format", "markdown", "--output", str(markdown))
    assert markdown.read_text(encoding="utf-8").startswith("# Tea planning")
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("out")) == ["out.jsonl", "out.md"]


def test_a2_sessions_export_to_a_missing_folder_is_a_clear_error(anyy: Run, tree: Tree, tmp_path: Path) -> None:
    result = anyy("sessions", "export", tree.session, "-o", str(tmp_path / "nowhere" / "out.jsonl"))
    assert result.exit_code == 1
    assert result.stderr.startswith(f"error: can't write {tmp_path / 'nowhere' / 'out.jsonl'}: No such file")
    assert "Traceback" not in result.output


def test_t2_sessions_tree_with_a_restart_before_the_first_entry(
    anyy: Run, profile: Profile, open_store: OpenStore
) -> None:
    with open_store(profile) as store:
        sid = store.create_session(NewSession()).id
        first, reply = store.append_entries(sid, [user("first try"), assistant("reply")])
        store.set_head(sid, None)
        (second,) = store.append_entries(sid, [user("second try")])
    assert anyy("sessions", "tree", sid).stdout.splitlines() == [
        f"  + {first.id} user: first try",
        f"    {reply.id} assistant: reply",
        f"* + {second.id} user: second try  <- head",
    ]


def test_b1_sessions_list_keeps_one_line_per_session(anyy: Run, profile: Profile, open_store: OpenStore) -> None:
    with open_store(profile) as store:
        store.create_session(NewSession(title="two\nlines"))
    lines = anyy("sessions", "list").stdout.splitlines()
    assert len(lines) == 1
    assert lines[0].endswith("two lines")


def test_a3_sessions_export_includes_bodies_kept_in_objects(anyy: Run, profile: Profile, open_store: OpenStore) -> None:
    body = "long paste " + "y" * 70_000
    with open_store(profile) as store:
        sid = store.create_session(NewSession()).id
        (entry,) = store.append_entries(sid, [user(body)])
    assert entry.object is not None
    records = [json.loads(line) for line in anyy("sessions", "export", sid).stdout.splitlines()]
    assert records[1]["entry"]["text"] == body
    assert body in anyy("sessions", "export", sid, "--format", "markdown").stdout


# -- one door: the Gateway when it runs, else the store, with the same answers ----------------------------


@pytest.fixture
def gateway_factory(home: Path, profile: Profile) -> Iterator[Callable[[], GatewayProcess]]:
    """Starts the profile's Gateway (``anyy gateway start``) on the sessions written so far; stopped after."""
    started: list[GatewayProcess] = []

    def start() -> GatewayProcess:
        done = live_run(home, "gateway", "start", "--profile", profile.name)
        assert done.returncode == 0, done.stderr
        started.append(GatewayProcess(home=home, profile=profile.name))
        return started[-1]

    yield start
    for _live in started:
        live_run(home, "gateway", "stop", "--profile", profile.name)


def test_a2_export_of_a_branched_session_agrees_through_both_doors(
    anyy: Run, tree: Tree, profile: Profile, open_store: OpenStore, gateway_factory: Callable[[], GatewayProcess]
) -> None:
    with open_store(profile) as store:  # branch a grows after branch b was made: ids no longer say the order
        store.set_head(tree.session, tree.ids["answer_a"])
        (more_a,) = store.append_entries(tree.session, [user("more on branch a")])
        store.set_head(tree.session, tree.ids["branch_b"])
    doors = [(sid, fmt) for sid in (tree.session, tree.fork) for fmt in ("jsonl", "markdown")]
    from_store = {door: anyy("sessions", "export", door[0], "--format", door[1]).stdout for door in doors}
    live = gateway_factory()
    with live.client() as client:
        over_rpc = {
            door: client.call("session.export", {"session_id": door[0], "format": door[1]})["content"] for door in doors
        }
    from_cli_with_gateway = {door: anyy("sessions", "export", door[0], "--format", door[1]).stdout for door in doors}
    assert over_rpc == from_store
    assert from_cli_with_gateway == from_store
    # Branch by branch: the label's two branches, each whole, the older one first.
    ids = [json.loads(line)["entry"]["id"] for line in from_store[(tree.session, "jsonl")].splitlines()[1:]]
    names = {v: k for k, v in tree.ids.items()} | {more_a.id: "more_a"}
    assert [names[i] for i in ids] == ["hello", "hi", "label", "branch_a", "answer_a", "more_a", "branch_b"]


def test_b1_sessions_commands_go_through_a_running_gateway(
    anyy: Run, tree: Tree, gateway_factory: Callable[[], GatewayProcess], monkeypatch: pytest.MonkeyPatch
) -> None:
    live = gateway_factory()

    def no_store(profile: Profile) -> None:
        raise AssertionError("the store was opened although a Gateway runs")

    monkeypatch.setattr(session_reads, "open_store", no_store)
    listed = json.loads(anyy("sessions", "list", "--json").stdout)
    assert {item["id"] for item in listed["items"]} == {tree.session, tree.fork}
    shown = json.loads(anyy("sessions", "show", tree.session, "--json").stdout)
    assert [e["id"] for e in shown["entries"]] == [tree.ids[n] for n in ("hello", "hi", "label", "branch_b")]
    assert shown["entries"][0]["kind"] == "user"
    tree_lines = anyy("sessions", "tree", tree.session).stdout
    assert "<- head" in tree_lines
    assert "[start]" in tree_lines or "start" in tree_lines
    hits = json.loads(anyy("sessions", "search", "matcha", "--json").stdout)
    assert [(h["session_id"], h["entry_id"]) for h in hits] == [(tree.fork, tree.ids["forked"])]
    missing = anyy("sessions", "show", "ses_0000000000aa")
    assert missing.exit_code == 1
    assert missing.stderr.startswith("error: no session 'ses_0000000000aa' in profile 'default'")
    with live.client() as client:
        assert client.call("session.get", {"session_id": tree.session})["session"]["id"] == tree.session


def test_b1_a_stale_gateway_address_falls_back_to_the_store(anyy: Run, tree: Tree, profile: Profile) -> None:
    stale = Address(profile=profile.name, pid=1, host="127.0.0.1", port=1, token="gone", started_at=0.0)
    write_address(profile, stale)  # a Gateway killed before it could remove its gateway.json
    listed = json.loads(anyy("sessions", "list", "--json").stdout)
    assert {item["id"] for item in listed["items"]} == {tree.session, tree.fork}


def test_u1_sessions_list_shows_each_last_message_through_both_doors(
    anyy: Run, tree: Tree, profile: Profile, open_store: OpenStore, gateway_factory: Callable[[], GatewayProcess]
) -> None:
    with open_store(profile) as store:  # the head on a label: the message before it is the preview
        store.set_head(tree.session, tree.ids["label"])
    expected = {tree.session: "hi there", tree.fork: "forked matcha question"}
    from_store = json.loads(anyy("sessions", "list", "--json").stdout)["items"]
    assert {item["id"]: item["preview"] for item in from_store} == expected
    text = anyy("sessions", "list").stdout
    assert "Tea planning — hi there" in text
    assert "Tea fork — forked matcha question" in text
    live = gateway_factory()
    with live.client() as client:
        over_rpc = client.call("session.list", {})["items"]
    assert {item["id"]: item["preview"] for item in over_rpc} == expected
    from_cli_with_gateway = json.loads(anyy("sessions", "list", "--json").stdout)["items"]
    assert {item["id"]: item["preview"] for item in from_cli_with_gateway} == expected
