// The Background pane's channels (L1, L2): each configured channel with its state, what it feeds, its
// paired senders, and the pairing codes waiting, each with Approve (channel.pair). Text only (no HTML
// strings): a sender's name comes from the platform, so from anyone.

function node(tag, className, text) {
  const el = document.createElement(tag);
  if (className) el.className = className;
  if (text !== undefined) el.textContent = text;
  return el;
}

function plural(count, word) {
  return `${count} ${word}${count === 1 ? "" : "s"}`;
}

function section() {
  let found = document.getElementById("channels");
  if (!found) {
    found = node("section", "channels");
    found.id = "channels";
    found.setAttribute("aria-label", "Channels");
    found.hidden = true;
    const sessions = document.getElementById("sessions");
    sessions.parentNode.insertBefore(found, sessions);
  }
  return found;
}

function codeItem(rpc, code, refresh) {
  const li = node("li", "code");
  const who = code.label || code.sender;
  li.append(node("span", "detail", `${who} asks to pair (code ${code.code})`));
  const approve = node("button", "approve", "Approve");
  approve.type = "button";
  approve.addEventListener("click", async () => {
    approve.disabled = true;
    try {
      await rpc.call("channel.pair", { code: code.code, rights: [] });
    } finally {
      await refresh();
    }
  });
  li.append(approve);
  return li;
}

async function channelItem(rpc, channel, refresh) {
  const li = node("li", "channel");
  li.dataset.state = channel.state;
  const head = node("div", "head");
  head.append(node("span", "name", channel.name), node("span", "kind muted", ` ${channel.kind} · `));
  head.append(node("span", "state", channel.state));
  li.append(head);
  if (channel.error) li.append(node("div", "error", channel.error));
  li.append(node("div", "meta", `feeds ${channel.target} · ${plural(channel.senders, "sender")} · ${plural(channel.codes, "code")} waiting`));
  if (channel.codes) {
    const detail = await rpc.call("channel.get", { name: channel.name });
    const codes = node("ul", "codes");
    for (const code of detail.codes) codes.append(codeItem(rpc, code, refresh));
    li.append(codes);
  }
  return li;
}

// Shown on the Background tab (when the profile has channels), hidden on the others.
export async function showChannels(rpc, visible) {
  const pane = section();
  if (!visible) {
    pane.hidden = true;
    return;
  }
  const refresh = () => showChannels(rpc, true);
  const channels = await rpc.call("channel.list", {});
  const list = node("ul", "channel-list");
  for (const channel of channels) list.append(await channelItem(rpc, channel, refresh));
  pane.replaceChildren(node("h2", "", "Channels"), list);
  pane.hidden = channels.length === 0;
}
