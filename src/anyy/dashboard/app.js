// The anyy Dashboard: ES modules, no build step. It speaks the Gateway's JSON-RPC over one WebSocket
// (rpc.js), like the CLI and the TUI. Model output is untrusted: it is rendered with DOM nodes and text
// only (markdown.js). Token counts are shown by usage.js.

import { renderMarkdown } from "./markdown.js";
import { CONFLICT, Rpc, fragmentParams, pairDevice, refreshToken, takeToken } from "./rpc.js";
import { activityNode, listLinks, originText, runItems, showList, taskItems, when } from "./background.js";
import { showChannels } from "./channels.js";
import { contextLabel, showSessionCost, usageLabel, usageOf } from "./usage.js";
import { installRewind } from "./rewind.js";

const PAGE = 50; // sessions and history entries per page
const $ = (id) => document.getElementById(id);

// -- state ------------------------------------------------------------------------------------------
const state = {
  rpc: null,
  kind: "chat",
  list: { cursor: null, done: false, loading: false, generation: 0 },
  session: null, // the open Session
  subscription: null,
  history: { cursor: null, loading: false, shown: new Set() },
  running: null, // the execution the page saw running
  stopped: new Set(), // executions stopped from this page: their late deltas are not shown
  liveText: "",
  liveEpoch: 0, // changes with the execution shown live (see recorded)
  queue: [],
  editing: new Map(), // submission id -> {text, version} while its edit box is open
  openGeneration: 0,
  retryTimer: null,
  search: { generation: 0, timer: null },
  tools: new Map(), // call id -> its activity line, for the running execution
  context: { tokens: null, budget: 0 }, // what the last response re-read, and the compaction budget
  working: { since: 0, timer: null }, // when the page saw the running execution start (elapsed time)
  asking: false, // a question waits for an answer (tab title, notification)
  token: "", // the access token (uploads are HTTP requests)
  attachments: [], // files attached to the message being written: {name, size, object?, media_type?}
  textOnly: new Set(), // U5: providers whose models read text only (models.list), refused an image at attach time
  draft: null, // a new conversation not created yet ({kind}): it is created by its first message (U1)
  halted: false, // U6: the last execution stopped or failed: pending items are left waiting (Continue / Clear)
  residents: null, // K4: the profile's residents by id, read with the Background list (their triggers)
  parents: new Map(), // K4: titles of the sessions that delegated tasks, by id
};

const APP_TITLE = "anyy Dashboard";
const FOLD_LINES = 12; // tool output longer than this is folded until "Show all"
const FOLD_CHARS = 1200;
const NARROW = window.matchMedia("(max-width: 767px)");

function banner(text) {
  const el = $("banner");
  el.textContent = text;
  el.hidden = !text;
}

function notice(text) {
  const el = $("notice");
  el.textContent = text;
  el.hidden = !text;
}

// -- the session lists (B1) -------------------------------------------------------------------------
function sessionItem(session) {
  const li = document.createElement("li");
  li.dataset.id = session.id;
  if (state.session && state.session.id === session.id) li.classList.add("current");
  const button = document.createElement("button");
  button.type = "button";
  button.className = "open";
  const title = document.createElement("span");
  title.className = "title";
  title.textContent = session.title || "Untitled";
  button.append(title);
  if (session.activity) button.append(activityNode(session.activity)); // K4: its state and last outcome
  if (session.origin) {
    const origin = document.createElement("span");
    origin.className = "origin meta muted";
    origin.textContent = originText(session.origin, state.residents, state.parents);
    button.append(origin);
  }
  if (session.preview) {
    // U1: the last message, under the title (cut short by the Gateway, one line here)
    const preview = document.createElement("span");
    preview.className = "preview muted";
    preview.textContent = session.preview;
    button.append(preview);
  }
  if (!session.activity || !session.activity.ended_at) {
    const meta = document.createElement("span");
    meta.className = "meta muted";
    meta.textContent = when(session.updated_at);
    button.append(meta);
  }
  button.addEventListener("click", () => openSession(session.id));
  li.append(button);
  if (!session.activity && lists.states.has(session.id)) rowState(li, lists.states.get(session.id));
  const links = listLinks(session, LISTS);
  if (links.length) {
    const row = document.createElement("div");
    row.className = "links";
    row.append(...links);
    li.append(row);
  }
  return li;
}

// K4: what the Background list names beside its sessions — the residents (their triggers) and the
// parents of delegated tasks (their titles) — read once per list, before the rows are made.
async function backgroundNames(sessions) {
  const rpc = state.rpc;
  if (!state.residents && sessions.some((s) => s.origin && s.origin.kind === "resident")) {
    state.residents = new Map((await rpc.call("resident.list", {})).map((r) => [r.id, r]));
  }
  const parents = new Set(sessions.filter((s) => s.origin && s.origin.kind === "delegate").map((s) => s.origin.parent_session_id));
  const missing = [...parents].filter((id) => !state.parents.has(id));
  const found = await Promise.all(missing.map((id) => rpc.call("session.get", { session_id: id }).catch(() => null)));
  for (const view of found) if (view) state.parents.set(view.session.id, view.session.title || "Untitled");
}

function renameInList(session) {
  const li = document.querySelector(`#sessions li[data-id="${session.id}"] .title`);
  if (li) li.textContent = session.title || "Untitled";
}

// K4: the open session's execution changed: its row in the Background list says so at once.
function activityInList(sessionId, executionState) {
  const badge = document.querySelector(`#sessions li[data-id="${sessionId}"] .activity .state`);
  if (!badge) return;
  const now = { running: "running", retry_wait: "retrying", suspended: "waiting_answer" }[executionState];
  const line = activityNode(now ? { state: now } : { state: "idle", outcome: executionState, ended_at: Date.now() / 1000 });
  badge.parentNode.replaceWith(line);
}

// -- lists that live (U7) ---------------------------------------------------------------------------
// A connection of its own follows every session's events (events.subscribe without a session), so the
// open conversation's subscription never gets an event twice. A row says what its session does (working,
// waiting for you, failed, idle) as its executions change; a title changes in place; a session the list
// does not show yet (made in another tab, the TUI, the CLI, a schedule) brings the list up to date.
const lists = { rpc: null, timer: null, states: new Map() }; // states: the last execution state seen, by session
const ROW_STATES = {
  running: ["working", "running"],
  retry_wait: ["working", "running"],
  suspended: ["waiting for you", "waiting"],
  failed: ["failed", "failed"],
  timed_out: ["failed", "failed"],
};

async function watchLists() {
  if (lists.rpc) lists.rpc.close();
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  const url = `${scheme}://${location.host}/ws?token=${encodeURIComponent(state.token)}`;
  const rpc = new Rpc(url, onListEvent, () => {
    if (lists.rpc === rpc) lists.rpc = null;
  });
  lists.rpc = rpc;
  await rpc.ready;
  await rpc.call("events.subscribe", {});
}

function rowOf(sessionId) {
  return document.querySelector(`#sessions li[data-id="${CSS.escape(sessionId)}"]`);
}

function onListEvent(event) {
  if (event.type === "text_delta" || event.type === "thinking_delta") return;
  if (event.type === "session_renamed") {
    if (rowOf(event.session_id)) renameInList({ id: event.session_id, title: event.title });
    else refreshListSoon();
  } else if (event.type === "execution_state") {
    showRowState(event.session_id, event.state);
  } else if ((event.type === "entries_appended" || event.type === "queue_changed") && !rowOf(event.session_id)) {
    refreshListSoon();
  }
}

function showRowState(sessionId, executionState) {
  lists.states.set(sessionId, executionState); // a row made later (the list read again) starts with it
  const li = rowOf(sessionId);
  if (!li) {
    refreshListSoon();
    return;
  }
  if (li.querySelector(".activity .state")) {
    activityInList(sessionId, executionState); // the Background list's own badge (K4)
    return;
  }
  rowState(li, executionState);
}

function rowState(li, executionState) {
  const [word, kind] = ROW_STATES[executionState] || ["idle", "idle"];
  let badge = li.querySelector(".row-state");
  if (!badge) {
    badge = document.createElement("span");
    badge.className = "row-state state";
    li.querySelector("button.open .title").after(badge);
  }
  badge.textContent = word;
  badge.dataset.state = kind;
  li.dataset.state = kind;
}

function refreshListSoon() {
  if (lists.timer || $("search").value.trim()) return;
  lists.timer = setTimeout(() => {
    lists.timer = null;
    resetSessions().catch(report);
  }, 30);
}

// The lists one click away (K1, K2, K4): a schedule's runs, a parent's delegated tasks; each item opens
// its session.
const LISTS = {
  showRuns: (scheduleId) => showRuns(scheduleId).catch(report),
  showTasks: (parentId, withParent) => showTasks(parentId, withParent).catch(report),
};

async function showRuns(scheduleId) {
  const [schedule, runs] = await Promise.all([
    state.rpc.call("schedule.get", { schedule: scheduleId }),
    state.rpc.call("schedule.runs", { schedule: scheduleId, limit: 50 }),
  ]);
  const next = schedule.paused ? "paused" : schedule.next_at ? `next: ${when(schedule.next_at)}` : "no next run";
  showList("runs-dialog", `Runs of ${schedule.name}`, next, runItems(runs), (id) => openSession(id).catch(report));
}

async function showTasks(parentId, withParent) {
  const tasks = await state.rpc.call("session.children", { session_id: parentId });
  const open = tasks.filter((task) => task.state === "waiting" || task.state === "running").length;
  const subtitle = `${tasks.length} task${tasks.length === 1 ? "" : "s"}${open ? `, ${open} not finished` : ""}`;
  const title = state.parents.get(parentId) || (state.session && state.session.id === parentId ? state.session.title : "");
  const heading = title ? `Tasks delegated by “${title}”` : "Delegated tasks";
  const items = taskItems(parentId, tasks, withParent, title);
  showList("tasks-dialog", heading, subtitle, items, (id) => openSession(id).catch(report));
}

async function loadSessions() {
  const list = state.list;
  if (list.loading || list.done) return;
  list.loading = true;
  const generation = list.generation;
  try {
    const page = await state.rpc.call("session.list", { kind: state.kind, limit: PAGE, cursor: list.cursor });
    if (generation !== state.list.generation) return;
    if (state.kind === "background") {
      await backgroundNames(page.items);
      if (generation !== state.list.generation) return;
    }
    const ul = $("sessions");
    for (const session of page.items) ul.append(sessionItem(session));
    list.cursor = page.next_cursor;
    list.done = page.next_cursor === null;
  } finally {
    list.loading = false;
  }
  if (generation !== state.list.generation) return;
  const ul = $("sessions");
  if (!list.done && ul.scrollHeight <= ul.clientHeight) await loadSessions();
}

function resetSessions() {
  state.list = { cursor: null, done: false, loading: false, generation: state.list.generation + 1 };
  state.residents = null;
  state.parents = new Map();
  $("sessions").replaceChildren();
  return loadSessions();
}

function selectTab(kind) {
  state.kind = kind;
  for (const tab of document.querySelectorAll(".tabs [role=tab]")) {
    tab.setAttribute("aria-selected", String(tab.dataset.kind === kind));
  }
  if ($("search").value.trim()) runSearch().catch(report);
  showChannels(state.rpc, kind === "background").catch(report); // L1: the channels, on the Background tab
  return resetSessions();
}

// -- search (B1) -----------------------------------------------------------------------------------
// session.search over the current tab's kind; a hit opens its conversation at that entry.
function snippetNode(snippet) {
  // The store marks the matched words with [ and ]: shown as <mark>, the rest as text.
  const span = document.createElement("span");
  span.className = "snippet";
  snippet.split(/\[([^\]\n]*)\]/).forEach((part, i) => {
    if (i % 2 === 1) {
      const mark = document.createElement("mark");
      mark.textContent = part;
      span.append(mark);
    } else if (part) {
      span.append(document.createTextNode(part));
    }
  });
  return span;
}

function hitItem(hit) {
  const li = document.createElement("li");
  li.dataset.id = hit.session_id;
  li.dataset.entryId = String(hit.entry_id);
  const open = document.createElement("button");
  open.type = "button";
  const title = document.createElement("span");
  title.className = "title";
  title.textContent = hit.session_title || "Untitled";
  const meta = document.createElement("span");
  meta.className = "meta muted";
  meta.textContent = `${hit.kind} · ${when(hit.created_at)}`;
  open.append(title, snippetNode(hit.snippet), meta);
  open.addEventListener("click", () => openSession(hit.session_id, hit.entry_id).catch(report));
  li.append(open);
  return li;
}

async function runSearch() {
  const query = $("search").value.trim();
  const generation = ++state.search.generation;
  const results = $("search-results");
  if (!query) {
    results.replaceChildren();
    results.hidden = true;
    $("sessions").hidden = false;
    return;
  }
  let hits;
  try {
    hits = await state.rpc.call("session.search", { query, kind: state.kind, limit: PAGE });
  } catch (error) {
    if (generation !== state.search.generation) return;
    if (error.code !== -32602) throw error;
    hits = []; // a query the search cannot read (only punctuation, say): no hits
  }
  if (generation !== state.search.generation) return;
  if (hits.length) {
    results.replaceChildren(...hits.map(hitItem));
  } else {
    const none = document.createElement("li");
    none.className = "muted none";
    none.textContent = "No messages match.";
    results.replaceChildren(none);
  }
  results.hidden = false;
  $("sessions").hidden = true;
}

function scheduleSearch() {
  clearTimeout(state.search.timer);
  state.search.timer = setTimeout(() => runSearch().catch(report), 120);
}

// -- a conversation ---------------------------------------------------------------------------------
const shownEntries = new WeakMap(); // each item of the conversation -> the entry it shows (Retry reads it)

function entryNode(entry) {
  const li = document.createElement("li");
  li.className = `entry kind-${entry.kind}`;
  li.dataset.entryId = String(entry.id);
  shownEntries.set(li, entry);
  if (entry.kind === "notice" && entry.data && entry.data.failed_execution) {
    failedTurn(li, entry);
  } else if (entry.kind === "assistant") {
    if (entry.text) {
      // (A response that only called tools has no text: its item stays empty, hidden by the style sheet.)
      const body = document.createElement("div");
      body.className = "body";
      body.append(withCopyButtons(renderMarkdown(entry.text)));
      li.append(body, copyButton(() => entry.text, "Copy this response"));
      renderLater(li, entry.text);
    }
    // Shown by the style sheet after the text (::after), so the message's own text stays what it was.
    const usage = usageOf(entry);
    if (usage) li.dataset.usage = usageLabel(usage);
  } else if (entry.kind === "user") {
    li.textContent = entry.text;
    const files = entry.data && Array.isArray(entry.data.attachments) ? entry.data.attachments : [];
    if (files.length) {
      const line = document.createElement("span");
      line.className = "files";
      line.textContent = `📎 ${files.map((f) => f.name).join(", ")}`;
      li.append(line);
    }
  } else if (entry.kind === "tool_call" && entry.data) {
    li.classList.add("muted");
    li.textContent = `⚙ ${callText(entry.data.name, entry.data.arguments)}`;
  } else {
    li.classList.add("muted");
    const label = entry.kind === "tool_result" && entry.data && entry.data.name
      ? `${entry.data.name} ${entry.data.is_error ? "failed" : "returned"}`
      : entry.kind.replace(/_/g, " ");
    if (entry.kind === "tool_result" && entry.text) {
      li.append(document.createTextNode(`${label}: `), foldedOutput(entry.text));
    } else {
      li.textContent = entry.text ? `${label}: ${entry.text}` : label;
    }
    const inner = entry.kind === "tool_result" && entry.data ? entry.data.inner_calls : null;
    if (Array.isArray(inner) && inner.length) li.append(recordedInnerCalls(inner));
  }
  return li;
}

// A failed turn (U2): its durable notice shows the error, with Retry and Edit while it ends the conversation
// (the style sheet hides the buttons once anything follows). Both move back to just before the failed
// message (the failed attempt stays in the tree, on a branch); Retry sends that message again, with its
// attachments, Edit puts it back in the editor to change it (U5: an image a model cannot take is removed
// there). A Retry the Gateway refuses also leaves the message in the editor, so it never fails for good.
function failedTurn(li, entry) {
  li.classList.add("failed-turn");
  const error = document.createElement("span");
  error.className = "error";
  error.textContent = entry.text;
  const retry = button("Retry", () => retryFailed(li).catch(report));
  retry.className = "retry";
  retry.title = entry.data.retryable
    ? "Send that message again"
    : "Send that message again (fix what the error names first, or it fails the same way)";
  const edit = button("Edit", () => retryFailed(li, { edit: true }).catch(report));
  edit.className = "retry edit-failed";
  edit.title = "Put that message back in the editor to change it (the failed attempt stays on a branch)";
  li.append(error, retry, edit);
}

async function retryFailed(noticeLi, { edit = false } = {}) {
  let node = noticeLi.previousElementSibling;
  while (node && !node.classList.contains("kind-user")) node = node.previousElementSibling;
  const failed = node ? shownEntries.get(node) : null;
  const session = state.session;
  if (!failed || !session) {
    notice(`The failed message is further back: scroll up to show it, then ${edit ? "Edit" : "Retry"}.`);
    return;
  }
  await state.rpc.call("session.navigate", { session_id: session.id, entry_id: failed.id, before: true });
  await openSession(session.id, null, { push: false });
  const attachments = (failed.data && failed.data.attachments) || [];
  if (edit) {
    backToEditor(failed.text, attachments, "");
    return;
  }
  try {
    await state.rpc.call("session.send", { session_id: session.id, text: failed.text, kind: "prompt", attachments });
  } catch (error) {
    backToEditor(failed.text, attachments, `Not sent: ${error.message || error}`);
  }
}

function backToEditor(text, attachments, why) {
  const editor = $("editor");
  editor.value = text;
  state.attachments = attachments.map(({ object, name, media_type, size }) => ({ object, name, media_type, size }));
  renderAttachments();
  editor.dispatchEvent(new Event("input"));
  editor.focus();
  notice(why);
}

function foldedOutput(text) {
  // What a tool returned, with its lines; long output is folded, "Show all" unfolds it (and back).
  const wrap = document.createElement("div");
  const pre = document.createElement("pre");
  pre.className = "output";
  pre.textContent = text;
  wrap.append(pre);
  if (text.split("\n").length > FOLD_LINES || text.length > FOLD_CHARS) {
    pre.classList.add("folded");
    const toggle = button("Show all", () => {
      const folded = pre.classList.toggle("folded");
      toggle.textContent = folded ? "Show all" : "Show less";
      toggle.setAttribute("aria-expanded", String(!folded));
    });
    toggle.className = "show-all";
    toggle.setAttribute("aria-expanded", "false");
    wrap.append(toggle);
  }
  return wrap;
}

function copyButton(text, label) {
  // Its words come from the style sheet (::before), so a message's text stays the message alone.
  const b = button("", () => {
    navigator.clipboard.writeText(text()).then(
      () => {
        b.classList.add("copied");
        setTimeout(() => b.classList.remove("copied"), 1500);
      },
      () => notice("The browser refused to copy (clipboard permission)."),
    );
  });
  b.className = "copy";
  b.setAttribute("aria-label", label);
  return b;
}

function withCopyButtons(fragment) {
  // Each code block gets its own Copy button (what it copies is the code's text only).
  for (const pre of fragment.querySelectorAll("pre")) {
    const block = document.createElement("div");
    block.className = "code-block";
    pre.replaceWith(block);
    block.append(pre, copyButton(() => pre.textContent, "Copy this code"));
  }
  return fragment;
}

// -- Markdown: rendered and sanitised by the Gateway (markdown.render: CommonMark, GFM tables, highlighted
// code, an allow-list of tags). A message shows at once through the small local renderer; its full
// rendering replaces it when the Gateway answers (one call per batch of messages shown together).
const toRender = [];

function renderLater(li, text) {
  toRender.push({ li, text });
  if (toRender.length === 1) queueMicrotask(renderBatch);
}

function renderBatch() {
  const batch = toRender.splice(0, 200);
  if (toRender.length) queueMicrotask(renderBatch);
  if (!state.rpc || !batch.length) return;
  state.rpc
    .call("markdown.render", { texts: batch.map((item) => item.text) })
    .then(({ html }) => {
      batch.forEach(({ li }, i) => {
        const body = document.createElement("div");
        body.className = "body";
        body.innerHTML = html[i]; // sanitised by the Gateway's allow-list (gateway/markdown_html.py)
        withCopyButtons(body);
        const old = li.querySelector(":scope > .body");
        if (old) old.replaceWith(body);
        li.dataset.rendered = "true";
      });
      if (follow.on) scrollToBottom(); // the rendered text may be taller: still at the latest
    })
    .catch(() => {}); // the local rendering stays
}

function atBottom(el) {
  return el.scrollHeight - el.scrollTop - el.clientHeight < 40;
}

// U6: the view follows the stream (new text, entries, tool lines, a queue or keyboard that shrinks the view)
// until the user scrolls away from the bottom; then "Jump to latest" brings it back. Only the user's own
// scrolling stops it: a layout change never does (it fires no scroll, or one at the position we set).
const follow = { on: true, top: -1, pending: false };

function scrollToBottom() {
  const box = $("messages");
  box.scrollTop = box.scrollHeight;
  follow.on = true;
  follow.top = box.scrollTop;
  $("jump-latest").hidden = true;
}

function keepFollowing() {
  if (follow.on) scrollToBottom();
  else $("jump-latest").hidden = false;
}

function watchScrolling() {
  const box = $("messages");
  box.addEventListener("scroll", () => {
    if (Math.abs(box.scrollTop - follow.top) <= 1) return; // where we put it
    follow.on = atBottom(box);
    follow.top = follow.on ? box.scrollTop : -1;
    if (follow.on) $("jump-latest").hidden = true;
  });
  new ResizeObserver(() => {
    if (follow.on && !box.hidden) scrollToBottom();
  }).observe(box);
  $("jump-latest").addEventListener("click", () => scrollToBottom());
}

async function loadOlder() {
  const h = state.history;
  if (h.loading || h.cursor === null || !state.session) return;
  h.loading = true;
  const generation = state.openGeneration;
  try {
    const page = await state.rpc.call("session.history", {
      session_id: state.session.id,
      limit: PAGE,
      cursor: h.cursor,
    });
    if (generation !== state.openGeneration) return;
    const box = $("messages");
    const fromBottom = box.scrollHeight - box.scrollTop;
    const nodes = page.items.filter((e) => !h.shown.has(e.id)).reverse();
    for (const entry of nodes) h.shown.add(entry.id);
    $("entries").prepend(...nodes.map(entryNode));
    box.scrollTop = box.scrollHeight - fromBottom;
    h.cursor = page.next_cursor;
  } finally {
    h.loading = false;
  }
}

async function appendNewEntries(event) {
  // The event carries the entries (as session.history shows them); a Gateway that sends only their ids
  // is asked for the newest page. Entries already shown are skipped either way.
  if (Array.isArray(event.entries) && event.entries.length === event.entry_ids.length) {
    showAppended(event.entries, state.liveEpoch);
    return;
  }
  const session = state.session;
  const epoch = state.liveEpoch;
  const limit = Math.max(event.entry_ids.length, 1) + 5;
  const page = await state.rpc.call("session.history", { session_id: session.id, limit });
  if (!state.session || state.session.id !== session.id) return;
  showAppended(page.items.slice().reverse(), epoch);
}

function showAppended(entries, epoch) {
  const fresh = entries.filter((e) => !state.history.shown.has(e.id));
  for (const entry of fresh) {
    state.history.shown.add(entry.id);
    $("entries").append(entryNode(entry));
    if (entry.kind === "assistant") {
      recorded(entry.text, epoch);
      const usage = usageOf(entry);
      if (usage) setContext(usage.read, state.context.budget);
      if (usage && usage.cost !== null && state.session) showSessionCost(state.rpc, state.session.id, $("cost"));
    }
  }
  if (fresh.length) keepFollowing();
}

// U6: the streaming answer is rendered block by block. A block is complete at a blank line outside a code
// fence: it is shown at once with the local renderer, then replaced by the Gateway's rendering (the one the
// recorded entry gets, sanitised the same way), so nothing reflows when the answer ends. The open block is
// plain text, only its text node updated per delta: the cost of a delta does not grow with the answer.
const liveBlocks = { done: 0, generation: 0, tail: null, painted: "", frame: 0 };

function setLive(text) {
  state.liveText = text;
  paintLive();
}

// Deltas that arrive together (a burst of frames, a busy page) are painted once, at the next frame.
function addLive(text) {
  state.liveText += text;
  if (!liveBlocks.frame) liveBlocks.frame = requestAnimationFrame(paintLive);
}

function paintLive() {
  cancelAnimationFrame(liveBlocks.frame);
  liveBlocks.frame = 0;
  const live = $("live");
  const text = state.liveText;
  const previous = liveBlocks.painted;
  liveBlocks.painted = text;
  live.hidden = !text;
  if (!text || !text.startsWith(previous) || !liveBlocks.tail || !live.contains(liveBlocks.tail)) {
    liveBlocks.done = 0;
    liveBlocks.generation++;
    liveBlocks.tail = document.createElement("div");
    liveBlocks.tail.className = "open-block";
    live.replaceChildren(liveBlocks.tail);
  }
  const end = completedBlocks(text, liveBlocks.done);
  if (end > liveBlocks.done) {
    const chunk = text.slice(liveBlocks.done, end);
    liveBlocks.done = end;
    const block = document.createElement("div");
    block.className = "block";
    block.append(renderMarkdown(chunk));
    live.insertBefore(block, liveBlocks.tail);
    renderBlock(block, chunk, liveBlocks.generation);
  }
  liveBlocks.tail.textContent = text.slice(liveBlocks.done);
}

// Where the complete blocks of ``text`` end, scanning from ``from`` (a block boundary, outside any fence).
function completedBlocks(text, from) {
  let end = from;
  let fence = null;
  let at = from;
  while (at < text.length) {
    const next = text.indexOf("\n", at);
    if (next === -1) break; // the last line is still being written
    const line = text.slice(at, next);
    const marker = /^\s{0,3}(`{3,}|~{3,})/.exec(line);
    if (fence) {
      if (marker && marker[1][0] === fence[0] && marker[1].length >= fence.length && !line.trim().slice(marker[1].length)) {
        fence = null;
      }
    } else if (marker) {
      fence = marker[1];
    } else if (!line.trim() && at > from) {
      end = next + 1;
    }
    at = next + 1;
  }
  return end;
}

function renderBlock(block, chunk, generation) {
  if (!state.rpc) return;
  state.rpc
    .call("markdown.render", { texts: [chunk] })
    .then(({ html }) => {
      if (generation !== liveBlocks.generation || !block.isConnected) return;
      block.innerHTML = html[0]; // sanitised by the Gateway's allow-list (gateway/markdown_html.py)
      if (follow.on) scrollToBottom();
    })
    .catch(() => {}); // the local rendering stays
}

function recorded(text, epoch) {
  // A response's text is now an entry: it leaves the live box. Only that text: by the time the history
  // arrives, the live box may already show the next pass, or another turn (never wiped with it).
  if (text && state.liveText.startsWith(text)) setLive(state.liveText.slice(text.length));
  else if (epoch === state.liveEpoch) setLive(""); // the same execution, some deltas unseen (opened mid-pass)
}

function setContext(tokens, budget) {
  state.context = { tokens, budget };
  const el = $("context");
  el.textContent = contextLabel(tokens, budget);
  el.dataset.tokens = tokens === null ? "" : String(tokens);
  el.dataset.budget = String(budget);
  el.classList.toggle("full", tokens !== null && budget > 0 && tokens >= 0.8 * budget);
}

function setRunning(executionId, label) {
  if (executionId !== state.running) {
    state.liveEpoch++;
    state.working.since = Date.now();
  }
  state.running = executionId;
  clearInterval(state.working.timer);
  state.working.timer = null;
  if (executionId && !label) {
    const tick = () => {
      const seconds = Math.floor((Date.now() - state.working.since) / 1000);
      $("status").textContent = `Working… ${elapsed(seconds)} (Escape or Stop ends it)`;
    };
    tick();
    state.working.timer = setInterval(tick, 1000);
  } else {
    $("status").textContent = label || "";
  }
  document.body.classList.toggle("busy", executionId !== null);
  $("stop").hidden = executionId === null;
  if (executionId) state.halted = false;
  renderQueue();
  $("send").title = executionId ? "Adds a follow-up: it starts when this response ends" : "Sends a prompt";
}

function elapsed(seconds) {
  return seconds < 60 ? `${seconds} s` : `${Math.floor(seconds / 60)} min ${String(seconds % 60).padStart(2, "0")} s`;
}

// -- attention: the tab's title and a notification when a question waits (U3) ----------------------
function showTitle() {
  const title = state.session ? `${state.session.title || "Untitled"} · ${APP_TITLE}` : APP_TITLE;
  document.title = state.asking ? `(?) Question waiting · ${title}` : title;
}

function setAsking(question) {
  const wasAsking = state.asking;
  state.asking = question !== null;
  showTitle();
  if (!state.asking || wasAsking || document.hasFocus()) return;
  if (!("Notification" in window) || Notification.permission !== "granted") return;
  const note = new Notification("anyy: the agent asks", { body: question || "A question waits for your answer." });
  note.addEventListener("click", () => {
    window.focus();
    note.close();
  });
}

function askNotificationPermission() {
  // Asked once, on a person's own action (sending), never on load.
  if ("Notification" in window && Notification.permission === "default") Notification.requestPermission().catch(() => {});
}

// -- the drawer (narrow screens): the lists slide over the conversation ----------------------------
function setDrawer(open) {
  document.body.classList.toggle("drawer-open", open);
  for (const menu of document.querySelectorAll(".menu")) menu.setAttribute("aria-expanded", String(open));
}

async function openSession(id, entryId = null, { push = true } = {}) {
  const started = performance.now();
  const generation = ++state.openGeneration;
  delete $("conversation").dataset.firstPageMs;
  delete $("conversation").dataset.firstPageAt;
  const rpc = state.rpc;
  if (state.subscription) {
    const old = state.subscription;
    state.subscription = null;
    rpc.call("events.unsubscribe", { subscription: old }).catch(() => {});
  }
  banner("");
  notice("");
  state.editing.clear();
  let view;
  let subscribed;
  try {
    subscribed = await rpc.call("events.subscribe", { session_id: id });
    view = await rpc.call("session.get", { session_id: id });
  } catch (error) {
    if (subscribed) rpc.call("events.unsubscribe", { subscription: subscribed.subscription }).catch(() => {});
    if (generation === state.openGeneration) banner(error.message);
    return;
  }
  if (generation !== state.openGeneration) {
    rpc.call("events.unsubscribe", { subscription: subscribed.subscription }).catch(() => {});
    return;
  }
  state.subscription = subscribed.subscription;
  state.session = view.session;
  state.draft = null;
  $("conv-header").classList.remove("draft");
  $("model-select").querySelector("option[value='']")?.remove(); // the draft's "profile default"
  // Each conversation opened is a step of the browser's history: Back returns to the previous one.
  const address = `${location.pathname}#session=${encodeURIComponent(id)}`;
  if (push && fragmentParams().get("session") !== id) history.pushState(null, "", address);
  else history.replaceState(null, "", address);
  setDrawer(false);
  state.asking = false;
  showTitle();
  for (const li of $("sessions").children) li.classList.toggle("current", li.dataset.id === id);
  $("empty").hidden = true;
  $("conversation").hidden = false;
  $("rename-form").hidden = true;
  $("rename").hidden = false;
  $("conv-links").replaceChildren();
  $("conv-links").hidden = true;
  showHeader();
  state.history = { cursor: null, loading: false, shown: new Set() };
  state.liveEpoch++;
  $("entries").replaceChildren();
  setLive("");
  clearRetry();
  clearTools();
  removeQuestion();
  setContext(view.context_tokens, view.context_budget);
  $("cost").textContent = "";
  showSessionCost(state.rpc, view.session.id, $("cost"));
  state.halted = !view.running_execution; // pending items of an idle session are left waiting
  setRunning(view.running_execution);
  if (view.running_execution) setLive(view.live_text);
  // The calls running as the session opens (their tool_started came before it was followed).
  for (const tool of view.running_tools ?? []) toolLine({ type: "tool_started", ...tool });
  const waiting = view.waiting_question; // opened while an execution waits for an answer
  if (waiting) {
    setRunning(null, "Waiting for your answer");
    showQuestion(waiting.execution_id, waiting.question);
    setAsking(waiting.question);
  }
  const retry = view.retry_wait; // opened during a retry wait: its countdown, from what is left
  if (retry) {
    setRunning(null, retry.error);
    showRetry({ ...retry, session_id: id, delay: retry.seconds_left });
  }
  const page = await rpc.call("session.history", { session_id: id, limit: PAGE });
  if (generation !== state.openGeneration) return;
  // Entries an event showed while this page was read (a session opened as its first message runs) are
  // newer than the rest of the page: the page goes before them, each entry once.
  const entries = page.items.slice().reverse().filter((entry) => !state.history.shown.has(entry.id));
  for (const entry of entries) state.history.shown.add(entry.id);
  $("entries").prepend(...entries.map(entryNode));
  state.history.cursor = page.next_cursor;
  scrollToBottom();
  markFirstPage(started, generation);
  const box = $("messages");
  while (state.history.cursor !== null && box.scrollHeight <= box.clientHeight) await loadOlder();
  if (entryId !== null) await showEntry(entryId, generation);
  await refreshQueue();
  if (generation !== state.openGeneration) return;
  await showConversationLinks(view.session, generation);
  if (generation !== state.openGeneration) return;
  const answer = document.querySelector("#question input");
  (answer || $("editor")).focus();
}

// K4 in the open conversation's header: what started it (with its runs or its parent's tasks) and the
// tasks it delegated, one click away — a Chat that delegated work has no row in the Background list.
async function showConversationLinks(session, generation) {
  const box = $("conv-links");
  box.replaceChildren();
  const tasks = await state.rpc.call("session.children", { session_id: session.id });
  if (generation !== state.openGeneration) return;
  const links = listLinks({ ...session, activity: { tasks: tasks.length } }, LISTS);
  if (session.origin) {
    const origin = document.createElement("span");
    origin.className = "origin muted";
    origin.textContent = originText(session.origin, state.residents, state.parents);
    box.append(origin);
  }
  box.append(...links);
  box.hidden = !box.childElementCount;
}

function markFirstPage(started, generation) {
  // The first page is painted once the frame after it has begun (two animation frames): the time
  // from the click (or from loading the page, for #session=ID) is kept for the tests and benchmarks.
  requestAnimationFrame(() =>
    requestAnimationFrame(() => {
      if (generation !== state.openGeneration) return;
      const now = performance.now();
      $("conversation").dataset.firstPageMs = (now - started).toFixed(1);
      $("conversation").dataset.firstPageAt = now.toFixed(1);
    }),
  );
}

const FIND_PAGES = 40; // how far back a search hit is looked for (40 pages of 50 entries)

async function showEntry(entryId, generation) {
  const find = () => document.querySelector(`#entries li[data-entry-id="${entryId}"]`);
  for (let pages = 0; !find() && state.history.cursor !== null && pages < FIND_PAGES; pages++) {
    await loadOlder();
    if (generation !== state.openGeneration) return;
  }
  const li = find();
  if (!li) {
    notice("That message is further back: scroll up to reach it.");
    return;
  }
  for (const old of document.querySelectorAll("#entries li.found")) old.classList.remove("found");
  li.classList.add("found");
  li.scrollIntoView({ block: "center" });
}

function showHeader() {
  const session = state.session;
  $("title").textContent = session.title || "Untitled";
  showWorkspace(session.workspace, "the Gateway's working directory");
  $("effort-select").value = session.effort || "";
  // What the Gateway last confirmed for this session (the selects may show a choice still in flight).
  $("conv-header").dataset.model = `${session.provider}/${session.model}`;
  $("conv-header").dataset.effort = session.effort || "";
  const select = $("model-select");
  const value = `${session.provider}/${session.model}`;
  if (![...select.options].some((o) => o.value === value)) {
    const option = document.createElement("option");
    option.value = value;
    option.textContent = value;
    select.append(option);
  }
  select.value = value;
}

function showWorkspace(workspace, none) {
  // W1: the folder the session's tools work in; a session made before workspaces has none (the Gateway's).
  const input = $("workspace-input");
  input.value = workspace || "";
  input.placeholder = none;
  input.title = workspace || none;
}

async function offerRecentWorkspaces() {
  // The profile's recent workspaces (those of its latest sessions), offered by the folder field.
  const page = await state.rpc.call("session.list", { limit: 100 });
  const seen = [...new Set(page.items.map((s) => s.workspace).filter(Boolean))];
  $("workspace-recent").replaceChildren(
    ...seen.map((path) => {
      const option = document.createElement("option");
      option.value = path;
      return option;
    }),
  );
  return seen;
}

async function changeWorkspace() {
  // A draft keeps the folder for its creation (the Gateway checks it then); a session moves there only
  // while idle: a refusal is said, and the field shows the session's folder again.
  const value = $("workspace-input").value.trim();
  if (state.draft) {
    if (value) state.draft.settings.workspace = value;
    else delete state.draft.settings.workspace;
    return;
  }
  if (!state.session || !value || value === state.session.workspace) {
    if (state.session) showHeader();
    return;
  }
  try {
    await changeSettings({ workspace: value });
    notice(`This session now works in ${state.session.workspace}.`);
  } catch (error) {
    showHeader();
    throw error;
  }
}

function openDraft() {
  // "New session" opens an empty conversation; the session is created by its first message, so opening
  // a client and leaving leaves nothing behind (U1).
  closeSession();
  state.draft = { kind: state.kind, settings: {} }; // settings: the model and effort chosen before sending
  showDraftSettings();
  showWorkspace("", "profile default");
  // The most recent workspace is proposed first; the field is free (an absolute folder on the Gateway's host).
  offerRecentWorkspaces()
    .then((recent) => {
      if (state.draft && recent.length && !$("workspace-input").value) {
        $("workspace-input").value = recent[0];
        state.draft.settings.workspace = recent[0];
      }
    })
    .catch(report);
  $("empty").hidden = true;
  $("conversation").hidden = false;
  $("conv-header").classList.add("draft");
  $("title").textContent = "New session";
  $("rename").hidden = true;
  $("rename-form").hidden = true;
  $("entries").replaceChildren();
  setLive("");
  state.queue = [];
  renderQueue();
  setContext(null, 0);
  setDrawer(false);
  if (fragmentParams().get("new") === null) history.pushState(null, "", `${location.pathname}#new`);
  $("editor").focus();
}

function showDraftSettings() {
  // Until the first message the profile's model is shown as "profile default"; a choice is kept here and
  // applied when the session is created.
  const select = $("model-select");
  let standard = select.querySelector("option[value='']");
  if (!standard) {
    standard = document.createElement("option");
    standard.value = "";
    standard.textContent = "profile default";
    select.prepend(standard);
  }
  const { provider, model, effort } = state.draft.settings;
  select.value = model === undefined ? "" : provider === undefined ? `alias/${model}` : `${provider}/${model}`;
  $("effort-select").value = effort || "";
}

async function sendFirst(message) {
  // The draft's first message creates its session with the draft's kind and settings in one call: both
  // or, refused (an unknown model, a lost file), neither, and the draft and its text stay (U1).
  const submission = await state.rpc.call("session.send", {
    new: { kind: state.draft.kind, ...state.draft.settings },
    ...message,
  });
  await openSession(submission.session_id, null, { push: false });
  resetSessions().catch(report);
}

function closeSession() {
  // Back to the page without a conversation (the browser's Back from the first one opened).
  state.openGeneration++;
  state.draft = null;
  $("conv-header").classList.remove("draft");
  if (state.subscription) {
    state.rpc.call("events.unsubscribe", { subscription: state.subscription }).catch(() => {});
    state.subscription = null;
  }
  state.session = null;
  setRunning(null);
  clearRetry();
  clearTools();
  removeQuestion();
  for (const li of $("sessions").children) li.classList.remove("current");
  $("conversation").hidden = true;
  $("empty").hidden = false;
  showTitle();
  if (NARROW.matches) setDrawer(true);
}

// -- events -----------------------------------------------------------------------------------------
function onEvent(event) {
  if (!state.session || event.session_id !== state.session.id) return;
  switch (event.type) {
    case "text_delta":
      if (state.stopped.has(event.execution_id)) return;
      if (state.running === null) setRunning(event.execution_id);
      if (event.execution_id === state.running) {
        addLive(event.text);
        if (liveBlocks.frame && !follow.pending) {
          follow.pending = true;
          requestAnimationFrame(() => {
            follow.pending = false;
            keepFollowing();
          });
        }
      }
      return;
    case "execution_state":
      onExecutionState(event);
      return;
    case "entries_appended":
      appendNewEntries(event).catch(report);
      return;
    case "queue_changed":
      // The event carries the queue as it is now; a Gateway that does not is asked.
      if (Array.isArray(event.pending)) showQueue(event.pending);
      else refreshQueue().catch(report);
      return;
    case "retry_wait":
      showRetry(event);
      return;
    case "tool_started":
    case "tool_finished":
      toolLine(event);
      return;
    case "notice":
      notice(event.text);
      return;
    case "session_renamed":
      // U1: named from the first message, then by the model (or renamed elsewhere)
      state.session.title = event.title;
      $("title").textContent = event.title || "Untitled";
      renameInList(state.session);
      showTitle();
      return;
    default:
      return;
  }
}

function onExecutionState(event) {
  activityInList(event.session_id, event.state);
  clearRetry();
  if (event.state !== "suspended") removeQuestion();
  if (event.state !== "running" && event.state !== "suspended") clearTools();
  if (event.state === "running") {
    if (!state.stopped.has(event.execution_id)) {
      setLive("");
      setRunning(event.execution_id);
    }
  } else if (event.state === "suspended") {
    setRunning(null, "Waiting for your answer");
    const question = event.question ? event.question.text : null; // carried by the event, else asked
    showQuestion(event.execution_id, question);
    if (question !== null) setAsking(question);
  } else if (event.execution_id === state.running || state.running === null) {
    setLive("");
    // An execution stopped from this page keeps saying so when its end arrives.
    const stopped = state.stopped.has(event.execution_id) && event.state === "interrupted";
    if (HALTED.has(event.state)) state.halted = true; // a retry wait is not an end: nothing is left over yet
    else if (event.state === "completed") state.halted = false;
    setRunning(null, stopped ? "Stopped" : event.state === "completed" ? "" : event.error || event.state);
  }
}

const HALTED = new Set(["interrupted", "failed", "timed_out", "cancelled"]);

function report(error) {
  banner(error.message || String(error));
}

// -- retries and clarifications ---------------------------------------------------------------------
function clearRetry() {
  if (state.retryTimer) clearInterval(state.retryTimer);
  state.retryTimer = null;
  const box = $("retry");
  if (box) box.remove();
}

function showRetry(event) {
  clearRetry();
  const box = document.createElement("div");
  box.id = "retry";
  box.dataset.executionId = event.execution_id;
  const label = document.createElement("span");
  const ref = { session_id: event.session_id, execution_id: event.execution_id };
  // Retry now: the model is called again at once. Cancel retry: the wait ends, and with it this answer.
  // (Escape stops the work, as Stop does: see stopRetrying.) Pending items stay queued either way.
  const now = button("Retry now", () => state.rpc.call("session.retry.now", ref).catch(report));
  now.className = "retry-now";
  now.title = "Call the model again now instead of waiting";
  const cancel = button("Cancel retry", () => state.rpc.call("session.retry.cancel", ref).catch(report));
  cancel.className = "retry-cancel";
  cancel.title = "End the wait and this answer; pending items stay queued";
  box.append(label, now, cancel);
  $("status").after(box);
  const end = Date.now() + event.delay * 1000;
  const tick = () => {
    const left = Math.max(0, Math.ceil((end - Date.now()) / 1000));
    label.textContent = `${event.error} — retrying in ${left} s (attempt ${event.attempt} of ${event.of}) `;
  };
  tick();
  state.retryTimer = setInterval(tick, 250);
}

function stopRetrying(executionId) {
  // The execution waiting to retry is not "running" on the page (nothing streams): stop it by its id.
  const session = state.session;
  if (!session || !executionId) return;
  state.stopped.add(executionId);
  clearRetry();
  setRunning(null, "Stopped");
  state.rpc.call("session.stop", { session_id: session.id, execution_id: executionId }).catch(report);
}

function removeQuestion() {
  const old = $("question");
  if (old) old.remove();
  if (state.asking) setAsking(null);
}

async function waitingQuestion(session, executionId) {
  // The question that execution waits on (session.get reports it once the execution is suspended).
  const view = await state.rpc.call("session.get", { session_id: session.id });
  const waiting = view.waiting_question;
  return waiting && waiting.execution_id === executionId ? waiting.question : "";
}

function showQuestion(executionId, question = null) {
  removeQuestion();
  const session = state.session;
  const form = document.createElement("form");
  form.id = "question";
  form.dataset.executionId = executionId;
  const asked = document.createElement("p");
  asked.className = "asked";
  asked.textContent = question ? `The agent asks: ${question}` : "The agent asks:";
  if (!question) {
    waitingQuestion(session, executionId)
      .then((text) => {
        if (!form.isConnected) return;
        if (text) {
          asked.textContent = `The agent asks: ${text}`;
          addApprovalButtons(form, executionId, text);
        }
        setAsking(text);
      })
      .catch(report);
  }
  const label = document.createElement("span");
  label.textContent = "Your answer: ";
  const input = document.createElement("input");
  input.setAttribute("aria-label", "Answer");
  const button = document.createElement("button");
  button.type = "submit";
  button.textContent = "Answer";
  form.append(asked, label, input, button);
  if (question) addApprovalButtons(form, executionId, question);
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    if (!input.value.trim()) return;
    state.rpc
      .call("session.answer", { session_id: state.session.id, execution_id: executionId, text: input.value })
      .then(() => form.remove())
      .catch(report);
  });
  $("status").after(form);
  input.focus();
}

// An approval request (N2: a tool call the profile's rules make wait) is a question answered with one of
// three decisions: the buttons call session.approve; the text field still answers (any other text denies).
const APPROVAL_PREFIX = "Approval needed:";
const DECISIONS = [
  ["once", "Approve once"],
  ["session", "Approve for this session"],
  ["deny", "Deny"],
];

function addApprovalButtons(form, executionId, question) {
  if (!question.startsWith(APPROVAL_PREFIX) || form.querySelector(".approval")) return;
  const box = document.createElement("p");
  box.className = "approval";
  for (const [decision, label] of DECISIONS) {
    const button = document.createElement("button");
    button.type = "button";
    button.textContent = label;
    button.addEventListener("click", () => {
      state.rpc
        .call("session.approve", { session_id: state.session.id, execution_id: executionId, decision })
        .then(() => form.remove())
        .catch(report);
    });
    box.append(button);
  }
  form.querySelector(".asked").after(box);
}

// -- tool activity ----------------------------------------------------------------------------------
// One line per tool call of the running execution: started, then done or failed. The calls a Codemode
// script (run_script) makes are listed under its line: `read_file(path=notes.txt) → ok`. The calls and
// their results are also recorded as entries (a script's calls with its result: data.inner_calls, shown
// under that entry, each folded with the beginning of what it returned); these lines go when the
// execution ends.
const ARGUMENT_CHARS = 80; // characters of an argument's value shown on a call's line

function callText(name, args) {
  const shown = Object.entries(args && typeof args === "object" ? args : {}).map(([key, value]) => {
    const text = typeof value === "string" ? value : (JSON.stringify(value) ?? String(value));
    const flat = text.trim().split(/\s+/).join(" ");
    return `${key}=${flat.length <= ARGUMENT_CHARS ? flat : `${flat.slice(0, ARGUMENT_CHARS - 1)}…`}`;
  });
  return `${name}(${shown.join(", ")})`;
}

function scriptLineOf(event) {
  // A call a Codemode script made names the script's call in parent_call_id.
  const li = event.parent_call_id ? state.tools.get(event.parent_call_id) : null;
  return li && li.classList.contains("tool") ? li : null;
}

function toolLine(event) {
  let li = state.tools.get(event.call_id);
  if (!li && event.parent_call_id && !state.tools.has(event.parent_call_id)) {
    // Opened while a script ran: its own start was not seen; its line stands for it until it ends.
    toolLine({ type: "tool_started", call_id: event.parent_call_id, name: "run_script", arguments: {} });
  }
  if (!li) {
    const script = scriptLineOf(event);
    li = document.createElement("li");
    li.dataset.callId = event.call_id;
    if (script) {
      li.className = "inner-call";
      // A call first seen by its end (the page opened meanwhile): its arguments were in the start event.
      li.dataset.call = event.arguments ? callText(event.name, event.arguments) : `${event.name}(…)`;
      let list = script.querySelector(":scope > ol.inner-calls");
      if (!list) {
        list = document.createElement("ol");
        list.className = "inner-calls";
        script.append(list);
      }
      list.append(li);
    } else {
      li.className = "tool";
      li.append(document.createElement("span"));
      $("activity").append(li);
      $("activity").hidden = false;
    }
    state.tools.set(event.call_id, li);
  }
  const started = event.type === "tool_started";
  li.dataset.state = started ? "running" : event.is_error ? "failed" : "done";
  if (li.className === "inner-call") {
    li.textContent = `${li.dataset.call} → ${started ? "running…" : event.is_error ? "error" : "ok"}`;
  } else {
    li.firstChild.textContent = `${event.name}: ${started ? "running…" : event.is_error ? "failed" : "done"}`;
  }
  keepFollowing();
}

function recordedInnerCalls(calls) {
  // Under a script's recorded result: one line per call it made; what a call returned (its beginning)
  // unfolds from its line. Text only: arguments and results come from the model and the tools.
  const list = document.createElement("ol");
  list.className = "inner-calls";
  for (const call of calls) {
    const li = document.createElement("li");
    li.className = "inner-call";
    li.dataset.state = call.is_error ? "failed" : "done";
    const line = `${callText(String(call.name ?? ""), call.arguments)} → ${call.is_error ? "error" : "ok"}`;
    if (call.result) {
      const details = document.createElement("details");
      const summary = document.createElement("summary");
      summary.textContent = line;
      const result = document.createElement("pre");
      result.textContent = String(call.result);
      details.append(summary, result);
      li.append(details);
    } else {
      li.textContent = line;
    }
    list.append(li);
  }
  return list;
}

function clearTools() {
  state.tools.clear();
  $("activity").replaceChildren();
  $("activity").hidden = true;
}

// -- the queue (Q2, Q3) -----------------------------------------------------------------------------
async function refreshQueue() {
  if (!state.session) return;
  const session = state.session;
  const items = await state.rpc.call("session.queue.list", { session_id: session.id });
  if (!state.session || state.session.id !== session.id) return;
  showQueue(items);
}

function showQueue(items) {
  state.queue = items;
  const present = new Set(items.map((item) => item.id));
  for (const [id, edit] of state.editing) {
    if (!present.has(id)) {
      // Taken by the agent (or removed elsewhere) while being edited: the text is not lost.
      state.editing.delete(id);
      keepInEditor(edit.text);
      notice("That item was taken meanwhile; your edited text is back in the editor.");
    }
  }
  renderQueue();
}

function keepInEditor(text) {
  const editor = $("editor");
  if (!text.trim() || editor.value.includes(text)) return;
  editor.value = editor.value ? `${text}\n\n${editor.value}` : text;
}

function renderQueue() {
  const ol = $("queue");
  const rows = state.queue.map(queueItem);
  if (state.queue.length && state.halted && !state.running && state.session) rows.unshift(leftoverRow());
  ol.replaceChildren(...rows);
}

// U6: items left waiting after a stop or a failure (nothing runs, so nothing takes them): say so, and offer
// to start them (session.continue) or remove them (session.queue.clear), as the TUI's /continue and /clear.
function leftoverRow() {
  const li = document.createElement("li");
  li.className = "leftover";
  const count = state.queue.length;
  const hint = document.createElement("span");
  hint.className = "hint muted";
  hint.textContent = `${count} item${count === 1 ? "" : "s"} left waiting: Continue starts ${count === 1 ? "it" : "them"}, Clear removes ${count === 1 ? "it" : "them"}.`;
  const session_id = state.session.id;
  const go = button("Continue", () => {
    state.halted = false;
    state.rpc.call("session.continue", { session_id }).then(refreshQueue).catch(report);
  });
  const clear = button("Clear", () => state.rpc.call("session.queue.clear", { session_id }).then(refreshQueue).catch(report));
  li.append(hint, go, clear);
  return li;
}

function queueItem(item) {
  const li = document.createElement("li");
  li.className = `queued kind-${item.kind}`;
  li.dataset.id = item.id;
  const kind = document.createElement("span");
  kind.className = "badge";
  kind.textContent = item.kind === "steering" ? "steering" : item.kind === "follow_up" ? "follow-up" : "prompt";
  li.append(kind);
  const edit = state.editing.get(item.id);
  if (edit) {
    const area = document.createElement("textarea");
    area.className = "edit";
    area.setAttribute("aria-label", "Edit pending item");
    area.value = edit.text;
    area.addEventListener("input", () => {
      edit.text = area.value;
    });
    area.addEventListener("keydown", (e) => {
      if (e.key === "Escape") {
        e.preventDefault();
        e.stopPropagation();
        cancelEdit(item.id);
      }
    });
    li.append(area, button("Save", () => saveEdit(item)), button("Cancel", () => cancelEdit(item.id)));
  } else {
    const text = document.createElement("span");
    text.className = "text";
    text.textContent = item.text;
    li.append(text);
    if (item.attachments.length) {
      const files = document.createElement("span");
      files.className = "muted attachments";
      files.textContent = item.attachments.map((a) => a.name).join(", ");
      li.append(files);
    }
    if (item.kind !== "steering") li.append(button("Steer", () => queueAction("session.queue.steer", item)));
    li.append(button("Edit", () => startEdit(item)), button("Delete", () => queueAction("session.queue.cancel", item)));
  }
  return li;
}

function button(label, onClick) {
  const b = document.createElement("button");
  b.type = "button";
  b.textContent = label;
  b.addEventListener("click", onClick);
  return b;
}

function startEdit(item) {
  state.editing.set(item.id, { text: item.text, version: item.version });
  renderQueue();
  const area = document.querySelector(`#queue li[data-id="${item.id}"] textarea`);
  if (area) area.focus();
}

function cancelEdit(id) {
  state.editing.delete(id);
  renderQueue();
}

async function saveEdit(item) {
  const edit = state.editing.get(item.id);
  if (!edit) return;
  try {
    // Attachments are not sent: the Gateway keeps them.
    await state.rpc.call("session.queue.update", { submission_id: item.id, version: edit.version, text: edit.text });
    state.editing.delete(item.id);
    notice("");
  } catch (error) {
    if (error.code !== CONFLICT) throw error;
    state.editing.delete(item.id);
    keepInEditor(edit.text);
    notice("That item changed meanwhile (taken or edited elsewhere): the queue is refreshed and your text is in the editor.");
  }
  await refreshQueue();
}

async function queueAction(method, item) {
  try {
    await state.rpc.call(method, { submission_id: item.id, version: item.version });
    notice("");
  } catch (error) {
    if (error.code !== CONFLICT) throw error;
    notice("That item was taken or changed meanwhile: the queue is refreshed.");
  }
  await refreshQueue();
}

// -- sending and stopping (Q2, S1) ------------------------------------------------------------------
async function send() {
  const editor = $("editor");
  const text = editor.value;
  if (!text.trim() || (!state.session && !state.draft)) return;
  if (state.attachments.some((file) => !file.object)) {
    notice("A file is still being uploaded: send again when it is attached.");
    return;
  }
  const kind = state.running ? "follow_up" : "prompt";
  if (!state.running && !state.queue.length) state.halted = false; // this prompt starts: nothing is left over
  const sent = state.attachments.slice();
  const attachments = sent.map(({ object, name, media_type, size }) => ({ object, name, media_type, size }));
  askNotificationPermission();
  // A key of the page's own (D8): a send retried after a lost reply is never queued twice.
  const idempotency_key = crypto.randomUUID();
  if (state.session) {
    await state.rpc.call("session.send", { session_id: state.session.id, text, kind, attachments, idempotency_key });
  } else {
    await sendFirst({ text, kind, attachments, idempotency_key });
  }
  // Only what was sent leaves the editor (the user may have typed or attached on meanwhile).
  editor.value = editor.value.startsWith(text) ? editor.value.slice(text.length) : editor.value;
  state.attachments = state.attachments.filter((file) => !sent.includes(file));
  renderAttachments();
  notice("");
}

// -- attachments (Q2): uploaded when chosen, dropped or pasted; sent with the message -----------------
// The provider/model the next message goes to, when it reads text only (U5); "" otherwise.
function textOnlyModel() {
  const value = $("model-select").value || "";
  const provider = value.split("/")[0];
  return state.textOnly.has(provider) ? value : "";
}

async function attach(files) {
  for (const file of files) {
    const item = { name: file.name || "pasted", size: file.size };
    const model = textOnlyModel();
    if (model && (file.type || "").startsWith("image/")) {
      notice(
        `${item.name} was not attached: the model ${model} reads text only and cannot take images. ` +
          "Choose a model that reads images, then attach it again.",
      );
      continue;
    }
    state.attachments.push(item);
    renderAttachments();
    try {
      const reply = await fetch(`/upload?name=${encodeURIComponent(item.name)}`, {
        method: "POST",
        headers: { Authorization: `Bearer ${state.token}`, "Content-Type": file.type || "application/octet-stream" },
        body: file,
      });
      const body = await reply.json();
      if (!reply.ok) throw new Error(body.error || `the upload failed (${reply.status})`);
      Object.assign(item, body);
    } catch (error) {
      state.attachments = state.attachments.filter((other) => other !== item);
      notice(`${item.name} was not attached: ${error.message}`);
    }
    renderAttachments();
  }
}

function renderAttachments() {
  const list = $("attachments");
  list.replaceChildren(
    ...state.attachments.map((item) => {
      const li = document.createElement("li");
      li.className = "chip";
      li.dataset.state = item.object ? "attached" : "uploading";
      const name = document.createElement("span");
      name.textContent = item.object ? item.name : `${item.name} (uploading…)`;
      const remove = button("×", () => {
        state.attachments = state.attachments.filter((other) => other !== item);
        renderAttachments();
      });
      remove.setAttribute("aria-label", `Remove ${item.name}`);
      li.append(name, remove);
      return li;
    }),
  );
  list.hidden = state.attachments.length === 0;
}

function stopDisplayed() {
  // The stop names the execution on screen: if it ended meanwhile (and another turn started), the Gateway
  // stops nothing (S1, S6) and the page says so; the later turn's own events show it running.
  const executionId = state.running;
  const session = state.session;
  if (!executionId || !session) return;
  state.stopped.add(executionId);
  setLive("");
  setRunning(null, "Stopped");
  state.rpc
    .call("session.stop", { session_id: session.id, execution_id: executionId })
    .then((result) => {
      if (result.stopped || !state.session || state.session.id !== session.id) return;
      if (state.running === null && $("status").textContent === "Stopped") $("status").textContent = "";
      notice("That response had already ended: nothing was stopped.");
    })
    .catch(report);
}

// -- model and effort (M1) --------------------------------------------------------------------------
async function loadModels() {
  const models = await state.rpc.call("models.list");
  state.textOnly = new Set(models.providers.filter((p) => p.images === false).map((p) => p.name));
  const select = $("model-select");
  select.replaceChildren();
  for (const provider of models.providers) {
    for (const model of provider.models) {
      const option = document.createElement("option");
      option.value = `${provider.name}/${model}`;
      option.textContent = `${provider.name}/${model}`;
      select.append(option);
    }
  }
  for (const alias of models.aliases || []) {
    const name = typeof alias === "string" ? alias : alias.name;
    if (!name) continue;
    const option = document.createElement("option");
    option.value = `alias/${name}`;
    option.textContent = name;
    select.append(option);
  }
}

async function changeSettings(params) {
  if (state.draft) {
    // Not created yet: the choice goes with its creation (the options are the Gateway's own catalogue).
    const settings = { ...state.draft.settings, ...params };
    if ("model" in params && !("provider" in params)) delete settings.provider; // as session.settings does
    if (!settings.model) {
      delete settings.provider; // back to "profile default"
      delete settings.model;
    }
    if (!settings.effort) delete settings.effort;
    state.draft.settings = settings;
    showDraftSettings();
    return;
  }
  if (!state.session) return;
  state.session = await state.rpc.call("session.settings", { session_id: state.session.id, ...params });
  showHeader();
}

// -- wiring -----------------------------------------------------------------------------------------
function wire() {
  $("new-session").addEventListener("click", () => openDraft());
  for (const tab of document.querySelectorAll(".tabs [role=tab]")) {
    tab.addEventListener("click", () => selectTab(tab.dataset.kind).catch(report));
  }
  $("search").addEventListener("input", scheduleSearch);
  $("search").addEventListener("keydown", (e) => {
    if (e.key === "Escape" && $("search").value) {
      e.preventDefault();
      $("search").value = "";
      runSearch().catch(report);
    }
  });
  $("sessions").addEventListener("scroll", () => {
    const ul = $("sessions");
    if (ul.scrollHeight - ul.scrollTop - ul.clientHeight < 200) loadSessions().catch(report);
  });
  $("messages").addEventListener("scroll", () => {
    if ($("messages").scrollTop < 100) loadOlder().catch(report);
  });
  $("composer").addEventListener("submit", (e) => {
    e.preventDefault();
    send().catch(report);
  });
  $("editor").addEventListener("keydown", (e) => {
    // Enter sends, Shift+Enter starts a new line (Ctrl/Cmd+Enter send too); never while an input method
    // is composing a character.
    if (e.key === "Enter" && !e.shiftKey && !e.altKey && !e.isComposing) {
      e.preventDefault();
      send().catch(report);
    }
  });
  $("stop").addEventListener("click", () => stopDisplayed());
  $("attach").addEventListener("click", () => $("file-input").click());
  $("file-input").addEventListener("change", () => {
    const files = [...$("file-input").files];
    $("file-input").value = "";
    attach(files).catch(report);
  });
  const composer = $("composer");
  composer.addEventListener("dragover", (e) => {
    if (!e.dataTransfer || ![...e.dataTransfer.types].includes("Files")) return;
    e.preventDefault();
    composer.classList.add("dropping");
  });
  composer.addEventListener("dragleave", () => composer.classList.remove("dropping"));
  composer.addEventListener("drop", (e) => {
    composer.classList.remove("dropping");
    if (!e.dataTransfer || !e.dataTransfer.files.length) return;
    e.preventDefault();
    attach([...e.dataTransfer.files]).catch(report);
  });
  $("editor").addEventListener("paste", (e) => {
    const files = e.clipboardData ? [...e.clipboardData.files] : [];
    if (!files.length) return; // text pastes as text
    e.preventDefault();
    attach(files).catch(report);
  });
  for (const menu of document.querySelectorAll(".menu")) {
    menu.addEventListener("click", () => setDrawer(!document.body.classList.contains("drawer-open")));
  }
  $("drawer-backdrop").addEventListener("click", () => setDrawer(false));
  window.addEventListener("popstate", () => {
    const wanted = fragmentParams().get("session");
    if (wanted && (!state.session || state.session.id !== wanted)) openSession(wanted, null, { push: false }).catch(report);
    else if (fragmentParams().get("new") !== null) openDraft();
    else if (!wanted) closeSession();
  });
  document.addEventListener("keydown", (e) => {
    if (e.key !== "Escape" || e.defaultPrevented) return;
    if (document.body.classList.contains("drawer-open")) {
      setDrawer(false); // a local window takes Escape first (S5)
      return;
    }
    if (!$("rename-form").hidden) {
      $("rename-form").hidden = true;
      $("rename").hidden = false;
      return;
    }
    const retry = $("retry");
    if (retry) {
      stopRetrying(retry.dataset.executionId); // during a retry wait, Escape stops the work (S1), not just the wait
      return;
    }
    stopDisplayed();
  });
  $("rename").addEventListener("click", () => {
    $("rename-input").value = state.session.title;
    $("rename-form").hidden = false;
    $("rename").hidden = true;
    $("rename-input").focus();
  });
  $("rename-form").addEventListener("submit", async (e) => {
    e.preventDefault();
    const session = await state.rpc.call("session.rename", {
      session_id: state.session.id,
      title: $("rename-input").value,
    });
    state.session = session;
    showTitle();
    $("rename-form").hidden = true;
    $("rename").hidden = false;
    showHeader();
    renameInList(session);
  });
  $("model-select").addEventListener("change", () => {
    const [provider, ...rest] = $("model-select").value.split("/");
    const model = rest.join("/");
    changeSettings(provider === "alias" ? { model } : { provider, model }).catch(report);
  });
  $("effort-select").addEventListener("change", () => {
    changeSettings({ effort: $("effort-select").value }).catch(report);
  });
  $("workspace-input").addEventListener("change", () => changeWorkspace().catch(report));
  $("workspace-input").addEventListener("focus", () => offerRecentWorkspaces().catch(() => {}));
}

async function main() {
  wire();
  watchScrolling();
  let token;
  try {
    await pairDevice(); // #pair=… from `anyy devices pair`: this device gets its own credential (a cookie)
    token = await takeToken();
  } catch (error) {
    banner(`${error.message}`);
    return;
  }
  if (!token) token = await refreshToken().catch(() => null); // U8: a browser the Gateway knows needs no code
  // Without a token, a paired device's cookie (docs/remote.md) authenticates the WebSocket.
  state.token = token || "";
  let status;
  try {
    status = await connect();
  } catch (error) {
    if (error.refused) {
      if (!token) return askPairingCode(); // neither the profile's token, a browser key nor a device cookie
      banner(`${error.message}`);
      return;
    }
    reconnectLater(); // the Gateway is down (restarting?): the page comes up when it is back
    return;
  }
  $("profile").textContent = status.profile;
  watchLists().catch(() => {}); // the lists then live (U7); without it they still load, and refresh on reload
  await Promise.all([loadModels().then(() => state.session && showHeader()), selectTab("chat")]);
  installRewind({
    rpc: () => state.rpc,
    session: () => state.session,
    reopen: (id) => openSession(id, null, { push: false }),
    notice,
  });
  const wanted = fragmentParams().get("session");
  if (wanted) await openSession(wanted, null, { push: false });
  else if (NARROW.matches) setDrawer(true); // a phone opens on the lists
  document.body.dataset.ready = "true";
  performance.mark("anyy-ready"); // time to interactive, read by the tests
  if (!token) offerNotifications().catch(() => {}); // a paired device may take Web Push (docs/remote.md)
}

// A paired device: the service worker shows the Gateway's pushes; the button asks the browser's
// permission (it needs a tap) and hands the Gateway this browser's push subscription.
async function offerNotifications() {
  if (!("serviceWorker" in navigator) || !("PushManager" in window)) return;
  const registration = await navigator.serviceWorker.register("/sw.js");
  document.body.dataset.serviceWorker = "registered";
  const button = $("notify");
  button.hidden = false;
  button.addEventListener("click", () => {
    subscribePush(registration)
      .then(() => {
        button.textContent = "Notifications on";
      })
      .catch((error) => banner(`Notifications: ${error.message}`));
  });
}

async function subscribePush(registration) {
  if ((await Notification.requestPermission()) !== "granted") throw new Error("not allowed by the browser");
  const { key } = await (await fetch("/push/key", { cache: "no-store" })).json();
  const raw = Uint8Array.from(atob(key.replace(/-/g, "+").replace(/_/g, "/")), (c) => c.charCodeAt(0));
  const subscription = await registration.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: raw });
  const reply = await fetch("/push/subscribe", {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ subscription: subscription.toJSON() }),
  });
  if (!reply.ok) throw new Error((await reply.json()).error || "the Gateway refused the subscription");
}

// Neither the profile's token nor a device credential: pair this device with the short code that
// `anyy devices pair` shows (or open the Dashboard with `anyy dashboard` on the machine itself).
function askPairingCode() {
  banner("Not paired: open the Dashboard with `anyy dashboard` on the machine, or pair this device (`anyy devices pair`).");
  const code = window.prompt("Pairing code (from `anyy devices pair` on the machine):");
  if (!code) return;
  pairDevice(code.trim())
    .then(() => location.reload())
    .catch((error) => banner(error.message));
}

// -- the connection, and coming back after a Gateway restart or a network drop (U8) --------------------
const UNAUTHORIZED_CLOSE = 4401;
const reconnecting = { attempt: 0, timer: null };

// A WebSocket to the Gateway, answering gateway.status; a token the Gateway refuses (it restarted) is traded
// again for the browser key (refreshToken) once. Errors carry `refused` when the browser is not known.
async function connect() {
  for (let round = 0; ; round++) {
    const scheme = location.protocol === "https:" ? "wss" : "ws";
    const query = state.token ? `?token=${encodeURIComponent(state.token)}` : ""; // a paired device: its cookie
    const url = `${scheme}://${location.host}/ws${query}`;
    const rpc = new Rpc(url, onEvent, (event) => lost(rpc, event));
    try {
      await rpc.ready;
      const status = await rpc.call("gateway.status");
      state.rpc = rpc;
      return status;
    } catch (error) {
      await Promise.race([rpc.closed, new Promise((resolve) => setTimeout(resolve, 2000))]);
      if (rpc.closeCode !== UNAUTHORIZED_CLOSE || round > 0) throw error;
      state.token = await refreshToken();
    }
  }
}

function lost(rpc, event) {
  if (rpc !== state.rpc) return; // an attempt that did not open, or a connection replaced already
  state.subscription = null; // the Gateway forgot it with the connection
  if (event.code === 4403) {
    banner("The Gateway refused this page (another origin): open the Dashboard with `anyy dashboard`.");
    return;
  }
  reconnectLater();
}

// Quietly, with backoff (0.25 s, doubling to 1 s: back within about a second of the Gateway being ready).
// The draft, the attached files and the open conversation stay as they are; the banner says what goes on.
function reconnectLater() {
  document.body.classList.add("offline");
  banner("Reconnecting to the Gateway…");
  clearTimeout(reconnecting.timer);
  const delay = Math.min(1000, 250 * 2 ** reconnecting.attempt);
  reconnecting.attempt++;
  reconnecting.timer = setTimeout(() => reconnect().catch(report), delay);
}

async function reconnect() {
  let status;
  try {
    status = await connect();
  } catch (error) {
    if (error.refused) {
      banner(`Not reconnected: ${error.message}`);
      return;
    }
    reconnectLater();
    return;
  }
  reconnecting.attempt = 0;
  document.body.classList.remove("offline");
  banner("");
  $("profile").textContent = status.profile;
  watchLists().catch(() => {});
  const box = $("messages");
  const position = box.scrollTop;
  const following = atBottom(box);
  await loadModels();
  await resetSessions();
  if (state.session) {
    await openSession(state.session.id, null, { push: false });
    if (!following) box.scrollTop = position;
  } else if (state.draft) {
    showDraftSettings();
  }
  document.body.dataset.ready = "true";
}

main().catch(report);
