// Token counts: the usage of each response (an assistant entry's data.usage: input, output, cache_read,
// cache_write; a provider leaves out the ones it did not report) and how full the session's context is
// against the compaction budget (session.get: context_tokens, context_budget).

// 340 → "340", 1234 → "1.2k", 45678 → "45.7k", 123456 → "123k", 1500000 → "1.5M" (as the TUI writes them)
export function tokens(n) {
  if (n < 1000) return String(n);
  let value = n / 1000;
  let unit = "k";
  if (Math.round(value) >= 1000) {
    value = n / 1_000_000;
    unit = "M";
  }
  const text = value < 100 ? value.toFixed(1) : value.toFixed(0);
  return text.replace(/\.0$/, "") + unit;
}

// The usage an entry reports, or null (entries other than responses, or a provider that reported none).
export function usageOf(entry) {
  const usage = entry.kind === "assistant" && entry.data ? entry.data.usage : null;
  if (!usage || typeof usage !== "object") return null;
  const count = (key) => Number(usage[key]) || 0;
  return {
    read: count("input") + count("cache_read") + count("cache_write"), // the whole prompt the model re-read
    output: count("output"),
    cacheRead: count("cache_read"),
    // What the call cost in nano-dollars (Y3); null: unpriced (no price for its model), never shown as $0.
    cost: Number.isInteger(entry.data.cost) ? entry.data.cost : null,
  };
}

// "↑3.2k ↓340" (sent to the model ↑, written by it ↓), with what came from the provider's cache.
export function usageLabel(usage) {
  const cached = usage.cacheRead ? ` (${tokens(usage.cacheRead)} cached)` : "";
  const cost = usage.cost === null || usage.cost === undefined ? "" : ` · ${usd(usage.cost)}`;
  return `↑${tokens(usage.read)}${cached} ↓${tokens(usage.output)}${cost}`;
}

// Nano-dollars as people read them, as the TUI and the CLI write them: "$0.0031", "$0.120", "$12.40";
// with unpriced calls "$1.20 + 3 unpriced"; nothing priced: "unpriced".
export function usd(nano, unpriced = 0) {
  if (nano === null || nano === undefined) return "unpriced";
  const value = nano / 1e9;
  const abs = Math.abs(value);
  let text;
  if (value === 0) text = "$0";
  else if (abs >= 1) text = "$" + value.toLocaleString("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 2 });
  else if (abs >= 0.01) text = `$${value.toFixed(3)}`;
  else text = abs >= 0.0001 ? `$${value.toFixed(4)}` : `$${value.toFixed(6)}`;
  return unpriced ? `${text} + ${unpriced} unpriced` : text;
}

// The header's cost of the open session with its delegated children (usage.report's sums of the costs
// kept with each call); empty until something is priced.
export async function showSessionCost(rpc, sessionId, element) {
  if (!element) return;
  let report;
  try {
    report = await rpc.call("usage.report", { by: "session", session_id: sessionId });
  } catch {
    return; // an older Gateway: the header goes without it
  }
  const total = report.total;
  const priced = total.calls > total.unpriced;
  element.textContent = priced ? usd(total.cost, total.unpriced) : "";
  element.dataset.cost = priced ? String(total.cost) : "";
  element.title = priced ? `What this session and its delegated tasks cost (prices: ${report.prices})` : "";
}

// "context 3.2k / 100k (3%)"; before any response the size is not known yet.
export function contextLabel(contextTokens, budget) {
  if (contextTokens === null || contextTokens === undefined) return `context — / ${tokens(budget)}`;
  return `context ${tokens(contextTokens)} / ${tokens(budget)} (${contextPercent(contextTokens, budget)}%)`;
}

export function contextPercent(contextTokens, budget) {
  return budget > 0 ? Math.round((100 * contextTokens) / budget) : 0;
}
