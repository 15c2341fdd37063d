// The Background list's words and lists (K4): what each session is doing and how its last execution
// ended, what started it (a schedule's run, a delegated task, a resident and its triggers), and the
// lists one click away — a schedule's runs, a parent's delegated tasks. Text only (no HTML strings).

const STATES = {
  running: "running",
  retrying: "retrying",
  waiting_answer: "waiting for an answer",
  waiting_tasks: "waiting for its tasks",
  queued: "queued, not running",
  idle: "idle",
};

export function when(seconds) {
  return new Date(seconds * 1000).toLocaleString();
}

// "3 minutes ago", "in 30 minutes", "yesterday"…: how far a moment is from now, in the page's language.
export function ago(seconds) {
  const minutes = Math.round((seconds - Date.now() / 1000) / 60);
  const words = new Intl.RelativeTimeFormat(undefined, { numeric: "auto" });
  if (Math.abs(minutes) < 60) return words.format(minutes, "minute");
  if (Math.abs(minutes) < 60 * 24) return words.format(Math.round(minutes / 60), "hour");
  return words.format(Math.round(minutes / 1440), "day");
}

// A date and time without seconds: "12/1/26, 8:00 AM".
export function short(seconds) {
  return new Date(seconds * 1000).toLocaleString(undefined, { dateStyle: "short", timeStyle: "short" });
}

function span(className, text) {
  const el = document.createElement("span");
  el.className = className;
  el.textContent = text;
  return el;
}

const OUTCOMES = { completed: "✓ completed", failed: "✗ failed", timed_out: "✗ timed out", interrupted: "! interrupted", budget_exhausted: "$ budget exhausted" };

// The badge: what it is doing, or, idle, how its last execution ended; then since when, what waits, why
// it failed ("✗ failed · 3 minutes ago — the key was refused").
export function activityNode(activity) {
  const line = span("activity meta", "");
  const idle = activity.state === "idle" && activity.outcome;
  const badge = span("state", idle ? OUTCOMES[activity.outcome] || activity.outcome : STATES[activity.state] || activity.state);
  badge.dataset.state = activity.state;
  if (activity.outcome) badge.dataset.outcome = activity.outcome;
  line.append(badge);
  const words = [];
  if (activity.pending && activity.state !== "idle") words.push(`${activity.pending} waiting`);
  if (activity.outcome && !idle) words.push(`last: ${activity.outcome}`);
  if (activity.ended_at) words.push(ago(activity.ended_at));
  if (words.length) line.append(span("outcome muted", words.join(" · ")));
  if (activity.error) {
    const error = span("error", activity.error);
    error.title = activity.error;
    line.append(error);
  }
  return line;
}

function every(seconds) {
  const minutes = seconds / 60;
  return minutes >= 60 && minutes % 60 === 0 ? `${minutes / 60} h` : `${minutes} min`;
}

// A resident's triggers and wakes: "heartbeat every 30 min · webhook /hooks/inbox · last woken by webhook…".
export function residentTriggers(resident) {
  const parts = [];
  if (resident.heartbeat_seconds) parts.push(`heartbeat every ${every(resident.heartbeat_seconds)}`);
  if (resident.webhook) parts.push(`webhook ${resident.webhook_path}`);
  if (!parts.length) parts.push("messages only");
  if (resident.paused) parts.push("paused");
  if (resident.last_wake_at) parts.push(`woken by ${resident.last_trigger || "a trigger"} ${ago(resident.last_wake_at)}`);
  if (resident.next_wake_at && !resident.paused) parts.push(`next wake ${ago(resident.next_wake_at)}`);
  return parts.join(" · ");
}

// What started a Background session: a schedule's run, a delegated task (its parent by title when the
// page knows it), a resident (with its triggers).
export function originText(origin, residents, parents) {
  if (origin.kind === "schedule") return `schedule ${origin.name} · run for ${short(origin.scheduled_for)}`;
  if (origin.kind === "delegate") {
    const title = parents && parents.get(origin.parent_session_id);
    return `delegated by ${title ? `“${title}”` : origin.parent_session_id}`;
  }
  const resident = residents && residents.get(origin.resident_id);
  const name = `resident ${origin.name || origin.resident_id}`;
  return resident ? `${name} · ${residentTriggers(resident)}` : name;
}

function linkButton(label, aria, onClick) {
  const b = document.createElement("button");
  b.type = "button";
  b.className = "list-link";
  b.textContent = label;
  b.setAttribute("aria-label", `${label}: ${aria}`); // what it shows, then of what (several rows have one)
  b.addEventListener("click", onClick);
  return b;
}

// The buttons under a Background session (or in an open conversation's header): its schedule's runs,
// its parent's tasks, its own tasks. ``lists`` has showRuns(scheduleId) and showTasks(parentId, withParent).
export function listLinks(session, lists) {
  const links = [];
  const origin = session.origin;
  if (origin && origin.kind === "schedule" && origin.schedule_id) {
    links.push(linkButton("Runs", `of the schedule ${origin.name}`, () => lists.showRuns(origin.schedule_id)));
  }
  if (origin && origin.kind === "delegate" && origin.parent_session_id) {
    const parent = origin.parent_session_id;
    links.push(linkButton("Parent's tasks", `delegated by the parent ${parent}`, () => lists.showTasks(parent, true)));
  }
  const tasks = session.activity ? session.activity.tasks : 0;
  if (tasks) {
    links.push(linkButton(`Tasks (${tasks})`, `delegated by ${session.title || session.id}`, () => lists.showTasks(session.id, false)));
  }
  return links;
}

function dialogNamed(id) {
  let dialog = document.getElementById(id);
  if (!dialog) {
    dialog = document.createElement("dialog");
    dialog.id = id;
    dialog.className = "list-dialog";
    document.body.append(dialog);
  }
  return dialog;
}

// A modal list: a heading, a line under it, items that each open a session (or say why not), Close.
export function showList(id, heading, subtitle, items, open) {
  const dialog = dialogNamed(id);
  const title = document.createElement("h2");
  title.textContent = heading;
  const sub = span("muted", subtitle);
  sub.className = "muted subtitle";
  const list = document.createElement("ul");
  for (const item of items) {
    const li = document.createElement("li");
    li.dataset.state = item.state || "";
    const body = item.sessionId ? document.createElement("button") : document.createElement("div");
    if (item.sessionId) {
      body.type = "button";
      body.addEventListener("click", () => {
        dialog.close();
        open(item.sessionId);
      });
    }
    body.append(span(`state${item.strong ? " strong" : ""}`, item.label));
    if (item.state) body.firstChild.dataset.state = item.state;
    if (item.detail) body.append(span("detail", item.detail));
    li.append(body);
    list.append(li);
  }
  if (!items.length) list.append(span("muted", "Nothing yet."));
  const close = document.createElement("button");
  close.type = "button";
  close.className = "close";
  close.textContent = "Close";
  close.addEventListener("click", () => dialog.close());
  dialog.replaceChildren(title, sub, list, close);
  dialog.showModal();
  return dialog;
}

// A schedule's runs, newest first, each opening its session.
export function runItems(runs) {
  return runs.map((run) => ({
    sessionId: run.session_id,
    state: run.outcome,
    label: `${when(run.scheduled_for)} · ${run.outcome}`,
    detail: run.error || "",
  }));
}

// A parent's delegated tasks, in order, each opening its child session; the parent first when asked.
export function taskItems(parentId, tasks, withParent, parentTitle) {
  const parent = { sessionId: parentId, label: "↑ Open the parent session", strong: true, detail: parentTitle || parentId };
  const items = withParent ? [parent] : [];
  for (const task of tasks) {
    const failed = task.state === "finished" && task.is_error;
    const state = failed ? "failed" : task.state;
    const result = task.result ? ` — ${task.result.replace(/\s+/g, " ").slice(0, 200)}` : "";
    items.push({ sessionId: task.child_session_id, state, label: `${state} · ${task.brief}`, detail: result.slice(3) });
  }
  return items;
}
