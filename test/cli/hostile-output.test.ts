// Every field the CLI prints for a person, fed a hostile value (CSI, OSC 52 clipboard write, BEL, C1 CSI/OSC,
// bidi overrides and isolates, zero-width characters, separators, an unterminated OSC): through a pipe and through
// a real pseudo-terminal (util-linux `script`), no control or format character reaches the output except the
// layout's newlines and, on a terminal, the CLI's own colour codes; `--json` parses back to the stored text.
import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import {
  HISTORY_DB_NAME,
  HistoryStorage,
  legacyDirectoryNames,
  ManagedSessionStorage,
  resolveManagedScopeOrThrow,
  SecureDir,
  SessionManager,
  type AgentMessage,
} from "../../src/index.js";
import { hasCommand, run, skipBecause } from "../helpers/processes.js";
import { makeTempDir } from "../helpers/temp.js";
import { BUILD_HOOK_TIMEOUT_MS, builtCli } from "./helpers.js";

/** Starts with a screen clear and a clipboard write, ends inside an OSC that never terminates. */
const HOSTILE =
  "A\u001b[2J\u001b]52;c;Y3VybCBldmlsIHwgc2g=\u0007B\u0007C\u009b31mD\u009d0;title\u009cE\u202eF\u2066G\u2069\u200bH\u200eI\ufeffJ\u200dK\u2028L\u061cM\tN\r\nO\u001b]0;unterminated";
/** The same, as a file name (no slash, no NUL). */
const HOSTILE_NAME = HOSTILE;
/** What the sanitizer shows for the start of {@link HOSTILE}: the CSI made visible. */
const SHOWN = "A\\x1b[2J\\x1b]52;c;";

/** Any control or format character, separator, or lone surrogate: what must never reach a terminal unescaped. */
const UNSAFE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}]/u;
/** The colour codes the CLI's own styles write. */
const OWN_SGR = /\u001b\[(?:1|2|22|31|32|33|36|39)m/g;

/** A terminal's screen without what the CLI itself writes there: its colours, the progress bar's redraw, CR LF line ends. */
function withoutOwnSequences(screen: string): string {
  return screen
    .replace(OWN_SGR, "")
    .replace(/\r\u001b\[2K/g, "")
    .replace(/\r\n/g, "");
}

let base: { path: string; remove(): void };
let agentDir: string;
let workspace: string;
let sessionId: string;
let sessionFile: string;
let demos = 0;

const quote = (arg: string) => `'${arg.replace(/'/g, "'\\''")}'`;

/** The first unsafe character of `text` with some context, or undefined. */
function leak(text: string): string | undefined {
  const at = text.search(UNSAFE);
  return at < 0 ? undefined : JSON.stringify(text.slice(Math.max(0, at - 20), at + 20));
}

function viaPipe(args: readonly string[]): { status: number | null; stdout: string; stderr: string } {
  const env = { ...process.env };
  delete env.NO_COLOR;
  return run(process.execPath, [builtCli(), ...args], { cwd: workspace, env, timeout: 120_000 });
}

function viaTerminal(args: readonly string[]): { status: number | null; screen: string } {
  const env = { ...process.env };
  delete env.NO_COLOR; // colour on: the CLI's own escape sequences are there, and nothing else
  const command = [process.execPath, builtCli(), ...args].map(quote).join(" ");
  const result = run("script", ["-qec", command, "/dev/null"], { cwd: workspace, env, timeout: 120_000 });
  return { status: result.status, screen: result.stdout };
}

const user = (text: string): AgentMessage => ({ role: "user", content: [{ type: "text", text }], timestamp: 1 }) as AgentMessage;

beforeAll(async () => {
  builtCli();
  base = makeTempDir("gjc-cli-hostile-");
  agentDir = path.join(base.path, "agent");
  workspace = path.join(base.path, `work-${HOSTILE_NAME}`);
  fs.mkdirSync(workspace, { mode: 0o700 });
  SecureDir.openRoot(agentDir, { create: true }).close();
  const storage = ManagedSessionStorage.open(agentDir);
  const scope = resolveManagedScopeOrThrow({ cwd: workspace, agentDir, mode: "write" });
  const session = SessionManager.create(scope.canonicalCwd, scope.directoryPath, storage, { agentDir, terminalId: null });
  session.appendModelChange(HOSTILE, HOSTILE);
  const first = session.appendMessage(user(HOSTILE));
  session.appendMessage({
    role: "assistant",
    provider: HOSTILE,
    model: HOSTILE,
    content: [
      { type: "text", text: HOSTILE },
      { type: "toolCall", id: "t1", name: HOSTILE, arguments: {} },
    ],
    timestamp: 2,
  } as unknown as AgentMessage);
  session.appendCustomMessageEntry(HOSTILE, HOSTILE, true);
  session.appendLabelChange(first, HOSTILE);
  session.appendBranchSummary(first, HOSTILE);
  session.appendCompaction(HOSTILE, HOSTILE, first, 100);
  await session.setSessionName(HOSTILE, "user");
  await session.flush();
  sessionId = session.getSessionId();
  sessionFile = session.getSessionFile() as string;
  await session.close();
  storage.close();
  // A file the listing skips and the audit reports, named by an attacker.
  fs.writeFileSync(path.join(scope.directoryPath, `${HOSTILE_NAME}.jsonl`), "{}\n", { mode: 0o644 });
  fs.chmodSync(path.join(scope.directoryPath, `${HOSTILE_NAME}.jsonl`), 0o644);
  // A legacy session to migrate, with a hostile file name.
  const legacyDir = path.join(agentDir, "sessions", legacyDirectoryNames(scope)[0] as string);
  fs.mkdirSync(legacyDir, { mode: 0o700 });
  const header = { type: "session", version: 3, id: "0180a0b0-0000-7000-8000-000000000009", timestamp: "2024-01-01T00:00:00.000Z", cwd: scope.canonicalCwd };
  const message = {
    type: "message",
    id: "m1",
    parentId: null,
    timestamp: "2024-01-01T00:00:01.000Z",
    message: { role: "user", content: HOSTILE, timestamp: 1 },
  };
  fs.writeFileSync(path.join(legacyDir, `2024-01-01T00-00-00-000Z_${HOSTILE_NAME}.jsonl`), `${JSON.stringify(header)}\n${JSON.stringify(message)}\n`, {
    mode: 0o600,
  });
  const history = HistoryStorage.open(path.join(agentDir, HISTORY_DB_NAME));
  await history.add(HOSTILE, workspace);
  history.close();
}, BUILD_HOOK_TIMEOUT_MS);

afterAll(() => base?.remove());

/** One command line of the matrix; `json`: its stdout is one JSON document holding the hostile text. */
interface Case {
  readonly name: string;
  readonly args: () => string[];
  readonly status: number;
  readonly json?: boolean;
}

const CASES: readonly Case[] = [
  { name: "list", args: () => ["list"], status: 0 },
  { name: "list --all", args: () => ["list", "--all"], status: 0 },
  { name: "list --json", args: () => ["list", "--json"], status: 0, json: true },
  { name: "list --all --json", args: () => ["list", "--all", "--json"], status: 0, json: true },
  { name: "show <id>", args: () => ["show", sessionId], status: 0 },
  { name: "show <file>", args: () => ["show", sessionFile], status: 0 },
  { name: "context", args: () => ["context", sessionId], status: 0 },
  { name: "context --json", args: () => ["context", sessionId, "--json"], status: 0, json: true },
  { name: "history recent", args: () => ["history", "recent"], status: 0 },
  { name: "history search", args: () => ["history", "search", "unterminated"], status: 0 },
  { name: "history recent --json", args: () => ["history", "recent", "--json"], status: 0, json: true },
  { name: "audit", args: () => ["audit"], status: 1 },
  { name: "audit --json", args: () => ["audit", "--json"], status: 1, json: true },
  { name: "migrate --dry-run", args: () => ["migrate", "--dry-run"], status: 0 },
  // A fresh agent dir each run, named by the attacker; the demo prints it and the hostile workspace.
  { name: "demo", args: () => ["demo", "--agent-dir", path.join(base.path, `demo-${++demos}-${HOSTILE_NAME}`)], status: 0 },
  // The error path: a reference, a directory and an option that quote the hostile text back.
  { name: "show <hostile id prefix>", args: () => ["show", HOSTILE], status: 1 },
  { name: "--verbose show <hostile id prefix>", args: () => ["--verbose", "show", `Z${HOSTILE}`], status: 1 },
  { name: "audit of a hostile path", args: () => ["audit", "--agent-dir", path.join(base.path, `gone-${HOSTILE_NAME}`)], status: 2 },
  { name: "context --leaf <hostile entry id>", args: () => ["context", sessionId, "--leaf", HOSTILE], status: 1 },
  { name: "a hostile unknown option", args: () => ["list", `--x${HOSTILE}`], status: 2 },
];

/** Every string inside a parsed JSON value. */
function strings(value: unknown, out: string[] = []): string[] {
  if (typeof value === "string") out.push(value);
  else if (Array.isArray(value)) for (const item of value) strings(item, out);
  else if (typeof value === "object" && value !== null) for (const item of Object.values(value)) strings(item, out);
  return out;
}

describe("hostile text in every printed field", () => {
  it.for(CASES)("$name: nothing raw through a pipe", ({ args, status, json }) => {
    const result = viaPipe(["--agent-dir", agentDir, ...args()]);
    const output = result.stdout + result.stderr;
    expect(result.status, output).toBe(status);
    expect(leak(output.replace(/\n/g, "")), output).toBeUndefined();
    if (json === true) {
      // Valid JSON that reads back to the stored text, C1 and format characters written as \uXXXX.
      expect(
        strings(JSON.parse(result.stdout)).some((text) => text.includes(HOSTILE)),
        result.stdout,
      ).toBe(true);
      expect(result.stdout).toContain("\\u009b31mD\\u009d0;title\\u009cE\\u202eF\\u2066G\\u2069\\u200bH\\u200eI\\ufeffJ\\u200dK\\u2028L\\u061cM");
    } else {
      expect(output).toContain(SHOWN);
    }
  });

  it.for(CASES)("$name: nothing raw on a terminal but the CLI's own colours", ({ args, status, json }, ctx) => {
    if (!hasCommand("script")) skipBecause(ctx, "util-linux `script` is not installed (no pseudo-terminal driver)");
    const { status: exit, screen } = viaTerminal(["--agent-dir", agentDir, ...args()]);
    expect(exit, screen).toBe(status);
    expect(leak(withoutOwnSequences(screen)), screen).toBeUndefined();
    expect(screen).toContain(json === true ? "\\u001b[2J" : SHOWN);
  });

  it("colours a terminal with the styles' own sequences only", (ctx) => {
    if (!hasCommand("script")) skipBecause(ctx, "util-linux `script` is not installed (no pseudo-terminal driver)");
    const { screen } = viaTerminal(["--agent-dir", agentDir, "audit"]);
    expect(screen).toContain("\u001b[1mAudit of\u001b[22m");
    expect(screen).toContain(`\u001b[2m  5 directories`);
  });

  it("migrate draws its progress bar with the hostile file name made visible", (ctx) => {
    if (!hasCommand("script")) skipBecause(ctx, "util-linux `script` is not installed (no pseudo-terminal driver)");
    const { status, screen } = viaTerminal(["--agent-dir", agentDir, "migrate"]);
    expect(status, screen).toBe(0);
    expect(leak(withoutOwnSequences(screen)), screen).toBeUndefined();
    expect(screen).toContain(`(1/1) 2024-01-01T00-00-00-000Z_${SHOWN}`);
    expect(screen).toMatch(/migrated/);
  });
});
