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
  };
}

// "↑3.2k ↓340" (sent to the model ↑, written by it ↓), with what came from the provider's cache.
export function usageLabel(usage) {
  const cached = usage.cacheRead ? ` (${tokens(usage.cacheRead)} cached)` : "";
  return `↑${tokens(usage.read)}${cached} ↓${tokens(usage.output)}`;
}

// "context 3.2k / 100k (3%)"; before any response the size is not known yet.
export function contextLabel(contextTokens, budget) {
  if (contextTokens === null || contextTokens === undefined) return `context — / ${tokens(budget)}`;
  return `context ${tokens(contextTokens)} / ${tokens(budget)} (${contextPercent(contextTokens, budget)}%)`;
}

export function contextPercent(contextTokens, budget) {
  return budget > 0 ? Math.round((100 * contextTokens) / budget) : 0;
}
