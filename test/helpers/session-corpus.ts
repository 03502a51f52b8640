/**
 * A seeded generator of sessions shaped like the ones agents really write, and an independent
 * full parse of a session file to check what the library reports about them.
 *
 * A session is a chain of turns (user prompt, assistant thinking and tool calls, tool results
 * with large outputs, a closing answer) with, at random: long first prompts (a pasted file or
 * stack trace), images, branches off an earlier message (the old branch abandoned), branches with
 * a summary, compactions at several depths followed by more turns, compactions and custom messages
 * left on an abandoned branch, labels set and cleared, names, model and thinking changes. The same
 * seed gives the same bytes.
 */
import fs from "node:fs";
import path from "node:path";

/** A 32-bit seeded generator (mulberry32): fast, and enough spread for shapes. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** What shape of session to make. */
export interface SessionShape {
  readonly seed: number;
  readonly cwd: string;
  /** entries to write at least (the last turn completes); default 60 */
  readonly entries?: number;
  /** header version: 3 is pi's current one, 5 ours (GJC's model field); default 5 */
  readonly version?: 3 | 5;
  /** characters of the first prompt; default a few hundred, sometimes a pasted file of several thousand */
  readonly firstPromptChars?: number;
  /** how much tool output a result carries at most; default 20,000 characters */
  readonly maxToolOutput?: number;
  /** when the session was created */
  readonly created?: Date;
}

/** A generated session: its file name (`<time>_<id>.jsonl`), id and text. */
export interface GeneratedSession {
  readonly name: string;
  readonly id: string;
  readonly text: string;
}

const WORDS = (
  "the parser token stream error handler module returns value index buffer line file session entry branch compaction " +
  "test fails passes because when after before config build cache request response retry timeout schema field type " +
  "function class import export async await promise result option path directory owner mode link lock writer reader"
).split(" ");

/** Makes one session after `shape`. */
export function generateSession(shape: SessionShape): GeneratedSession {
  const random = seededRandom(shape.seed);
  const int = (min: number, max: number) => min + Math.floor(random() * (max - min + 1));
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)] as T;
  const words = (n: number) => Array.from({ length: n }, () => pick(WORDS)).join(" ");
  const hex = (n: number) => Array.from({ length: n }, () => "0123456789abcdef"[int(0, 15)]).join("");
  const version = shape.version ?? 5;
  const target = shape.entries ?? 60;
  const maxOutput = shape.maxToolOutput ?? 20_000;
  const created = shape.created ?? new Date(Date.UTC(2026, 4, 1, 9, 0, 0) + int(0, 86_400_000));
  let clock = created.getTime();
  const stamp = () => new Date((clock += int(200, 5000))).toISOString();
  const id = `019${hex(5)}-${hex(4)}-7${hex(3)}-8${hex(3)}-${hex(12)}`;
  const used = new Set<string>();
  const entryId = (): string => {
    let next = hex(8);
    while (used.has(next)) next = hex(8);
    used.add(next);
    return next;
  };

  const lines: string[] = [JSON.stringify({ type: "session", version, id, timestamp: new Date(clock).toISOString(), cwd: shape.cwd })];
  /** every entry written, and the path from the root to the current leaf (ids) */
  const path: string[] = [];
  const messageIds: string[] = [];
  let count = 0;
  const add = (type: string, fields: Record<string, unknown>): string => {
    const idOf = entryId();
    const parentId = path.length === 0 ? null : (path[path.length - 1] as string);
    lines.push(JSON.stringify({ type, id: idOf, parentId, timestamp: stamp(), ...fields }));
    path.push(idOf);
    count += 1;
    return idOf;
  };
  let model = pick(["claude-sonnet-4-5", "gpt-5.1-codex", "gemini-2.5-pro"]);
  const provider = () => (model.startsWith("claude") ? "anthropic" : model.startsWith("gpt") ? "openai" : "google");
  const message = (msg: Record<string, unknown>) => {
    const idOf = add("message", { message: { ...msg, timestamp: clock } });
    messageIds.push(idOf);
    return idOf;
  };
  const pastedFile = (chars: number) => {
    const out: string[] = [];
    let size = 0;
    for (let n = 1; size < chars; n++) {
      const line = `${String(n).padStart(4)}  ${pick(["const", "let", "export function", "if (", "return", "// "])} ${words(int(3, 12))};`;
      out.push(line);
      size += line.length + 1;
    }
    return out.join("\n").slice(0, chars);
  };
  const image = () => ({
    type: "image",
    mimeType: "image/png",
    data: Buffer.from(Array.from({ length: int(1500, 6000) }, () => int(0, 255))).toString("base64"),
  });
  const userTurn = (text: string, withImage: boolean) =>
    message({ role: "user", content: withImage ? [{ type: "text", text }, image()] : [{ type: "text", text }] });
  const assistant = (content: unknown[], stopReason: string) =>
    message({
      role: "assistant",
      content,
      api: "messages",
      provider: provider(),
      model,
      usage: {
        input: int(100, 90_000),
        output: int(10, 4000),
        cacheRead: 0,
        cacheWrite: 0,
        totalTokens: int(200, 95_000),
        cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
      },
      stopReason,
    });
  const turn = (prompt: string) => {
    userTurn(prompt, random() < 0.08);
    const calls = int(0, 3);
    for (let c = 0; c < calls; c++) {
      const callId = `toolu_${hex(16)}`;
      const tool = pick(["read", "bash", "edit", "grep"]);
      assistant(
        [
          { type: "thinking", thinking: words(int(10, 60)) },
          { type: "toolCall", id: callId, name: tool, arguments: { path: `src/${pick(WORDS)}.ts`, command: words(3) } },
        ],
        "toolUse",
      );
      const output = random() < 0.3 ? pastedFile(int(2000, maxOutput)) : words(int(5, 80));
      message({ role: "toolResult", toolCallId: callId, toolName: tool, content: [{ type: "text", text: output }], isError: random() < 0.1 });
    }
    assistant([{ type: "text", text: `${words(int(8, 120))}.` }], "stop");
  };

  // The opening: model and thinking level, then the first prompt.
  if (version === 3) add("model_change", { provider: provider(), modelId: model });
  else add("model_change", { model: `${provider()}/${model}` });
  add("thinking_level_change", { thinkingLevel: pick(["low", "medium", "high"]) });
  const firstChars = shape.firstPromptChars ?? (random() < 0.3 ? int(4000, 30_000) : int(20, 400));
  const opening = `Please look at this ${pick(["file", "stack trace", "diff"])} and ${words(6)}`;
  turn(
    firstChars > 200
      ? `${opening}:\n\n${pastedFile(firstChars - opening.length - 3)}`
      : `${opening} ${words(Math.max(1, Math.floor(firstChars / 7)))}`.slice(0, Math.max(firstChars, 10)),
  );

  /** Moves the leaf back to an earlier message: the entries after it stay on an abandoned branch. */
  const branchBack = () => {
    const onPath = messageIds.filter((m) => path.includes(m));
    if (onPath.length < 3) return undefined;
    // Mostly a few messages back, as a user retries; now and then much further.
    const back = random() < 0.8 ? int(2, Math.min(8, onPath.length)) : int(2, onPath.length);
    const to = onPath[onPath.length - back] as string;
    const oldLeaf = path[path.length - 1] as string;
    path.length = path.indexOf(to) + 1;
    branched = true;
    return oldLeaf;
  };
  let branched = false;
  while (count < target) {
    const roll = random();
    if (roll < 0.06) {
      branchBack();
    } else if (roll < 0.1) {
      const oldLeaf = branchBack();
      if (oldLeaf !== undefined) add("branch_summary", { fromId: oldLeaf, summary: `Tried ${words(12)}; abandoned because ${words(8)}.` });
    } else if (roll < 0.15) {
      const onPath = messageIds.filter((m) => path.includes(m));
      const kept = onPath[Math.max(0, onPath.length - int(1, 6))];
      add("compaction", { summary: `## Goal\n${words(40)}\n## Progress\n${words(80)}`, firstKeptEntryId: kept, tokensBefore: int(50_000, 190_000) });
      // Sometimes the compaction is abandoned: the user goes back to before it.
      if (random() < 0.25) branchBack();
    } else if (roll < 0.18) {
      const target = pick(path);
      add("label", random() < 0.8 ? { targetId: target, label: pick(["checkpoint", "good", "before refactor", "bug here"]) } : { targetId: target });
    } else if (roll < 0.2) {
      add("session_info", { name: `${pick(["Fix", "Refactor", "Explain"])} ${words(3)}` });
    } else if (roll < 0.22) {
      model = pick(["claude-sonnet-4-5", "claude-opus-4-1", "gpt-5.1-codex", "gemini-2.5-pro"]);
      if (version === 3) add("model_change", { provider: provider(), modelId: model });
      else add("model_change", { model: `${provider()}/${model}` });
      if (random() < 0.5) add("thinking_level_change", { thinkingLevel: pick(["off", "minimal", "low", "medium", "high"]) });
    } else if (roll < 0.24) {
      add("custom_message", { customType: "reminder", content: `Remember: ${words(10)}`, display: random() < 0.5 });
      if (random() < 0.3) branchBack();
    } else if (roll < 0.25) {
      add("custom", { customType: "todo-state", data: { items: [words(3), words(4)] } });
    } else {
      turn(random() < 0.05 ? pastedFile(int(3000, 12_000)) : `${words(int(4, 40))}?`);
    }
  }
  // Every session holds an abandoned branch: the entries a reader must find off the leaf's path.
  while (!branched) {
    branchBack();
    turn(`${words(int(4, 20))}?`);
  }
  const time = new Date(created).toISOString().replace(/[:.]/g, "-");
  return { name: `${time}_${id}.jsonl`, id, text: `${lines.join("\n")}\n` };
}

/** The shapes of the corpus: every feature above across versions, first prompts short and long, and one session of 10^4+ entries. */
export function corpusShapes(cwd: string, seed = 29): SessionShape[] {
  return [
    { seed, cwd, entries: 40, firstPromptChars: 80 },
    { seed: seed + 1, cwd, entries: 120, firstPromptChars: 6500 },
    { seed: seed + 2, cwd, entries: 300, firstPromptChars: 25_000, version: 3 },
    { seed: seed + 3, cwd, entries: 80, version: 3 },
    { seed: seed + 4, cwd, entries: 600, firstPromptChars: 9000 },
    { seed: seed + 5, cwd, entries: 12_000, firstPromptChars: 7000, maxToolOutput: 4000 },
  ];
}

/** Writes the sessions of `shapes` into `dir` (0600 files), returning them in order. */
export function writeCorpus(dir: string, shapes: readonly SessionShape[]): (GeneratedSession & { readonly path: string })[] {
  return shapes.map((shape) => {
    const session = generateSession(shape);
    const file = path.join(dir, session.name);
    fs.writeFileSync(file, session.text, { mode: 0o600 });
    return { ...session, path: file };
  });
}

/** What a full parse of a session file says, computed here without the library. */
export interface ParsedSession {
  readonly header: Record<string, unknown>;
  readonly entries: readonly Record<string, unknown>[];
  /** `message` entries with a role */
  readonly messageCount: number;
  /** text blocks of the first user message, joined by a space */
  readonly firstMessage: string | undefined;
  /** the last entry's id */
  readonly leafId: string | null;
  /** the latest `session_info` name */
  readonly name: string | undefined;
  /** ids from the root to the leaf */
  readonly pathToLeaf: readonly string[];
  /** entries on no path to the leaf */
  readonly offPath: number;
}

/** Parses every line of `text` (a session file written as one JSON record per line). */
export function parseSessionText(text: string): ParsedSession {
  const records = text
    .split("\n")
    .filter((line) => line.length > 0)
    .map((line) => JSON.parse(line) as Record<string, unknown>);
  const [header, ...entries] = records as [Record<string, unknown>, ...Record<string, unknown>[]];
  let messageCount = 0;
  let firstMessage: string | undefined;
  let name: string | undefined;
  const parents = new Map<string, string | null>();
  for (const entry of entries) {
    parents.set(entry.id as string, entry.parentId as string | null);
    if (entry.type === "session_info" && typeof entry.name === "string") name = entry.name;
    if (entry.type !== "message") continue;
    const msg = entry.message as { role?: unknown; content?: unknown };
    if (typeof msg.role !== "string") continue;
    messageCount += 1;
    if (msg.role === "user" && firstMessage === undefined && Array.isArray(msg.content)) {
      const text = (msg.content as { type: string; text?: string }[])
        .filter((b) => b.type === "text")
        .map((b) => b.text)
        .join(" ");
      if (text.length > 0) firstMessage = text;
    }
  }
  const leafId = entries.length === 0 ? null : (entries[entries.length - 1]?.id as string);
  const pathToLeaf: string[] = [];
  for (let at: string | null | undefined = leafId; typeof at === "string"; at = parents.get(at)) pathToLeaf.unshift(at);
  return { header, entries, messageCount, firstMessage, leafId, name, pathToLeaf, offPath: entries.length - pathToLeaf.length };
}
