// ameesh's runner for DeepSeek Harness (dsh): a Cordis plugin mounted by the overlay dsh_overlay.yml in
// place of dsh's own one-shot runner (`dsh --profile headless`), which prints only the final text and
// always opens a new session. This one takes its turn from the app's command line:
//
//   dsh --profile headless --patch dsh_overlay.yml (--session-id ID | --resume ID)
//       [--provider P] [--model M] [--effort off|low|high|max] -- PROMPT
//
// creates the session under the id ameesh chose, or resumes it, with the model and the effort given
// (dsh keeps neither in a session: they are passed every turn), plays the prompt through dsh's own agent
// API, flushes the session and prints JSON lines: {"type":"session",…} once the session is open, then
// {"type":"result",…} with the reason the turn ended, its text and its usage. Exit 0 when the turn
// completed, 1 when it ended otherwise, 2 when the session could not be opened.
import { realpathSync } from "node:fs";
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";

export const name = "ameesh-runner";
export const inject = ["agentDefaultModel", "agents", "sessions", "cmdlineArgs"];

// dsh's packages are resolved from dsh's own installation, not from this file's directory.
const fromDsh = createRequire(realpathSync(process.argv[1]));
const load = (pkg) => import(pathToFileURL(fromDsh.resolve(pkg)).href);

function emit(fields) {
  process.stdout.write(JSON.stringify(fields) + "\n");
}

function message(error) {
  return error instanceof Error ? error.message : String(error);
}

// What the turn produced, read from the session's events from `firstSeq` on.
function fold(events, firstSeq) {
  let text = "";
  let reason;
  let steps = 0;
  let last = null;
  const usage = { input_tokens: 0, output_tokens: 0, cache_read_tokens: 0 };
  for (const event of events) {
    if (event.seq < firstSeq) continue;
    if (event.type === "assistant/message") {
      const joined = event.data.message.content
        .filter((block) => block.type === "text")
        .map((block) => block.text)
        .join("");
      if (joined !== "") text = joined;
      const used = event.data.usage;
      if (used) {
        steps += 1;
        last = used;
        usage.input_tokens += used.inputTokens ?? 0;
        usage.output_tokens += used.outputTokens ?? 0;
        usage.cache_read_tokens += used.cacheReadTokens ?? 0;
      }
    }
    if (event.type === "turn/end") reason = event.data.reason;
  }
  return { text, reason, steps, usage, last };
}

function unfinished(kind) {
  return kind === "none" ? "the turn did not end: dsh was stopped during it" : `the turn ended: ${kind}`;
}

async function run(ctx) {
  const { values, positionals } = parseArgs({
    args: [...ctx.get("cmdlineArgs").get()],
    options: {
      "session-id": { type: "string" },
      resume: { type: "string" },
      provider: { type: "string" },
      model: { type: "string" },
      effort: { type: "string" },
    },
    allowPositionals: true,
  });
  const prompt = positionals.join(" ");
  const id = values.resume ?? values["session-id"];
  if (!id || prompt.trim() === "") {
    emit({ type: "result", session_id: id ?? null, is_error: true, reason: "usage", error: "a session id (--session-id or --resume) and a prompt are required" });
    return 2;
  }
  await ctx.get("loader")?.await();
  const agents = ctx.get("agents");
  const sessions = ctx.get("sessions");
  const base = ctx.get("agentDefaultModel").currentSelection();
  const [{ installModelSelection }, { createUserMessage }, { SessionId }] = await Promise.all([
    load("@deepseek-ai/dsh-agent"),
    load("@deepseek-ai/dsh-llm"),
    load("@deepseek-ai/dsh-session"),
  ]);
  const effort = values.effort ?? base.reasoningEffort;
  const selection = {
    provider: values.provider ?? base.provider,
    model: values.model ?? base.model,
    ...(effort === undefined ? {} : { reasoningEffort: effort }),
  };
  const agentOptions = { provider: selection.provider, model: selection.model };
  const setup = (agentCtx) => {
    installModelSelection(agentCtx, { current: selection, assembled: undefined });
  };
  let handle;
  try {
    handle = values.resume
      ? await agents.resume({ resumeSessionId: SessionId(id), agentOptions, setup })
      : await agents.create({ sessionId: SessionId(id), meta: { cwd: process.cwd() }, agentOptions, setup });
  } catch (error) {
    emit({ type: "result", session_id: id, is_error: true, reason: "session-open-failed", error: message(error) });
    return 2;
  }
  const { agent } = handle;
  emit({
    type: "session",
    session_id: id,
    resumed: values.resume !== undefined,
    provider: selection.provider,
    model: selection.model,
    effort: effort ?? null,
  });
  await agent.whenIdle();
  const firstSeq = agent.session.seq;
  agent.followup(createUserMessage({ content: [{ type: "text", text: prompt }], source: { kind: "user" } }));
  await agent.whenIdle();
  await sessions.flush(agent.session);
  const outcome = fold(agent.session.events, firstSeq);
  const kind = outcome.reason?.kind ?? "none";
  const completed = kind === "completed";
  emit({
    type: "result",
    session_id: id,
    is_error: !completed,
    reason: kind,
    ...(completed ? {} : { error: outcome.reason?.error ?? { message: unfinished(kind) } }),
    text: outcome.text,
    usage: outcome.usage,
    last_step_usage: outcome.last,
    steps: outcome.steps,
  });
  return completed ? 0 : 1;
}

export function apply(ctx) {
  const exit = ctx.get("appExit");
  run(ctx).then(
    (code) => exit(code),
    (error) => {
      emit({ type: "result", is_error: true, reason: "runner-failed", error: message(error) });
      exit(2);
    },
  );
}
