// Rewind from a message (W3): each of your messages in the conversation gets a "Rewind" button. It opens
// a panel that first shows what restoring the workspace's files to that moment would change (files added,
// changed, removed, and those changed by hand since the agent's last capture, kept unless you tick the
// box), then restores the conversation only (back to just before the message, its text in the editor),
// the files only (the conversation stays), or both. Text only (no HTML strings).

const $ = (id) => document.getElementById(id);

let hooks = null; // {rpc(), session(), reopen(id), notice(text)} from app.js
let target = null; // the user entry id the open panel rewinds to

function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  Object.assign(node, props);
  node.append(...children);
  return node;
}

function panel() {
  let dialog = $("rewind-panel");
  if (dialog) return dialog;
  dialog = el("dialog", { id: "rewind-panel" });
  dialog.setAttribute("aria-labelledby", "rewind-heading");
  const overwrite = el("input", { type: "checkbox", id: "rewind-overwrite" });
  const choices = el(
    "div",
    { className: "rewind-actions" },
    el("button", { type: "button", id: "rewind-conversation", textContent: "Conversation only" }),
    el("button", { type: "button", id: "rewind-files", textContent: "Files only" }),
    el("button", { type: "button", id: "rewind-both", textContent: "Conversation and files" }),
    el("button", { type: "button", id: "rewind-cancel", textContent: "Cancel" }),
  );
  dialog.append(
    el("h2", { id: "rewind-heading", textContent: "Rewind to before" }),
    el("p", { id: "rewind-message", className: "muted" }),
    el("div", { id: "rewind-preview", textContent: "Reading what would change…" }),
    el("label", { id: "rewind-overwrite-label", hidden: true }, overwrite, " Also restore the files changed by hand"),
    choices,
  );
  document.body.append(dialog);
  $("rewind-cancel").addEventListener("click", () => dialog.close());
  $("rewind-conversation").addEventListener("click", () => run(true, false));
  $("rewind-files").addEventListener("click", () => run(false, true));
  $("rewind-both").addEventListener("click", () => run(true, true));
  return dialog;
}

function listing(title, paths, mark) {
  if (!paths.length) return [];
  const list = el("ul", { className: "rewind-paths" });
  list.setAttribute("aria-label", title);
  for (const path of paths) list.append(el("li", { textContent: `${mark} ${path}` }));
  return [el("h3", { textContent: `${title} (${paths.length})` }), list];
}

function showPreview(files) {
  const box = $("rewind-preview");
  box.replaceChildren();
  const parts = [
    ...listing("Would add", files.added, "+"),
    ...listing("Would change", files.changed, "~"),
    ...listing("Would remove", files.removed, "-"),
    ...listing("Changed by hand since the agent's last capture (kept)", files.hand_edited, "!"),
  ];
  if (!parts.length) parts.push(el("p", { textContent: `The files in ${files.workspace} are as they were then.` }));
  else parts.unshift(el("p", { className: "muted", textContent: `In ${files.workspace}:` }));
  box.append(...parts);
  $("rewind-overwrite-label").hidden = !files.hand_edited.length;
  $("rewind-files").disabled = false;
  $("rewind-both").disabled = false;
}

function noFiles(message) {
  $("rewind-preview").replaceChildren(el("p", { textContent: message }));
  $("rewind-files").disabled = true;
  $("rewind-both").disabled = true;
}

async function open(entryId, text) {
  const session = hooks.session();
  if (!session) return;
  target = entryId;
  const dialog = panel();
  $("rewind-message").textContent = text.length > 160 ? `${text.slice(0, 160)}…` : text;
  $("rewind-preview").textContent = "Reading what would change…";
  $("rewind-overwrite").checked = false;
  $("rewind-overwrite-label").hidden = true;
  if (!dialog.open) dialog.showModal();
  try {
    const result = await hooks.rpc().call("session.navigate", {
      session_id: session.id,
      entry_id: entryId,
      files: "preview",
    });
    if (target === entryId) showPreview(result.files);
  } catch (error) {
    // No capture on the way there (the agent changed no files), or captures are off: the conversation
    // can still go back.
    if (target === entryId) noFiles(`The files cannot be restored: ${error.message}`);
  }
}

async function run(conversation, files) {
  const session = hooks.session();
  const dialog = $("rewind-panel");
  if (!session || target === null) return;
  const rpc = hooks.rpc();
  const entryId = target;
  const done = [];
  try {
    if (files) {
      const result = await rpc.call("session.navigate", {
        session_id: session.id,
        entry_id: entryId,
        files: "restore",
        conversation: false,
        overwrite_hand_edits: $("rewind-overwrite").checked,
      });
      const f = result.files;
      done.push(`files restored: ${f.added.length} added, ${f.changed.length} changed, ${f.removed.length} removed`);
      if (f.kept.length) done.push(`kept as you changed them: ${f.kept.join(", ")}`);
      if (f.not_restorable.length) done.push(`not restored: ${f.not_restorable.join(", ")}`);
    }
    let draft = null;
    if (conversation) {
      const moved = await rpc.call("session.navigate", { session_id: session.id, entry_id: entryId, before: true });
      draft = moved.draft;
      done.unshift("conversation moved back to before that message");
    }
    dialog.close();
    if (conversation) await hooks.reopen(session.id);
    if (draft !== null && draft !== undefined) $("editor").value = draft;
    hooks.notice(`Rewound: ${done.join("; ")}.`);
  } catch (error) {
    $("rewind-preview").prepend(el("p", { className: "error", textContent: error.message }));
  }
}

function decorate(li) {
  if (!li.classList || !li.classList.contains("kind-user") || li.querySelector(":scope > .rewind")) return;
  const b = el("button", { type: "button", className: "rewind" });
  // Its word comes from the style sheet (::before), so the message's text stays the message alone.
  b.setAttribute("aria-label", "Rewind to before this");
  b.title = "Rewind the conversation, the files, or both, to before this point";
  b.addEventListener("click", () => {
    const text = li.firstChild && li.firstChild.nodeType === Node.TEXT_NODE ? li.firstChild.textContent : "";
    open(Number(li.dataset.entryId), text).catch((error) => hooks.notice(error.message));
  });
  li.append(b);
}

// Called once by app.js with what the panel needs of the page.
export function installRewind(given) {
  hooks = given;
  const entries = $("entries");
  for (const li of entries.children) decorate(li);
  new MutationObserver((changes) => {
    for (const change of changes) for (const node of change.addedNodes) decorate(node);
  }).observe(entries, { childList: true });
}
