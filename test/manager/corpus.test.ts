// Every listing, open and resume entry point of the main and /pi entries over the generated
// corpus of real-shaped sessions (long first prompts, tool output, images, branches, compactions
// followed by more turns, 10^4+ entries), in a managed scope and in an explicit directory, each
// result checked against a full parse of the file; and no read changes a byte of it.
import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import {
  findMostRecentSession,
  getRecentSessions,
  listAll,
  listRecentSessions,
  listSessions,
  loadEntriesFromFile,
  resolveManagedScopeOrThrow,
  resolveResumableSession,
  SecureDir,
  SessionManager,
  type SessionInfo,
} from "../../src/index.js";
import { SessionManager as PiSessionManager } from "../../src/pi/index.js";
import { corpusShapes, generateSession, parseSessionText, type GeneratedSession, type ParsedSession } from "../helpers/session-corpus.js";
import { makeTempDir } from "../helpers/temp.js";

let temp: ReturnType<typeof makeTempDir>;
let agentDir: string;
let workspace: string;
let scopeDir: string;
let explicitDir: string;
const corpus: { session: GeneratedSession; parsed: ParsedSession }[] = [];
const options = { terminalId: null } as const;

beforeAll(() => {
  temp = makeTempDir("gjc-corpus-");
  agentDir = path.join(temp.path, "agent");
  workspace = path.join(temp.path, "workspace");
  explicitDir = path.join(temp.path, "explicit");
  fs.mkdirSync(workspace);
  fs.mkdirSync(explicitDir, { mode: 0o700 });
  SecureDir.openRoot(agentDir, { create: true }).close();
  const scope = resolveManagedScopeOrThrow({ cwd: workspace, agentDir, mode: "write" });
  scopeDir = scope.directoryPath;
  const dir = SecureDir.openRoot(agentDir).openDir(["sessions", scope.directoryName]);
  try {
    corpusShapes(scope.canonicalCwd, 2900).forEach((shape, n) => {
      const session = generateSession(shape);
      dir.writeFileAtomic(session.name, session.text);
      fs.writeFileSync(path.join(explicitDir, session.name), session.text, { mode: 0o600 });
      // Distinct mtimes, the last shape newest, so "most recent" has one answer.
      const when = new Date(Date.UTC(2026, 5, 1) + n * 60_000);
      fs.utimesSync(path.join(scopeDir, session.name), when, when);
      fs.utimesSync(path.join(explicitDir, session.name), when, when);
      corpus.push({ session, parsed: parseSessionText(session.text) });
    });
  } finally {
    dir.close();
  }
}, 120_000);

afterAll(() => temp?.remove());

/** Checks a listing row against the full parse of its file. */
function expectRow(row: SessionInfo | undefined, parsed: ParsedSession, where: string): void {
  expect(row, where).toBeDefined();
  expect({ id: row!.id, messageCount: row!.messageCount, estimate: row!.messageCountIsEstimate, firstMessage: row!.firstMessage }, where).toEqual({
    id: parsed.header.id,
    messageCount: parsed.messageCount,
    estimate: false,
    firstMessage: parsed.firstMessage,
  });
}

function expectAllRows(rows: readonly SessionInfo[], where: string): void {
  expect(rows, where).toHaveLength(corpus.length);
  for (const { session, parsed } of corpus)
    expectRow(
      rows.find((r) => r.id === session.id),
      parsed,
      `${where}: ${session.name}`,
    );
}

const newest = () => corpus[corpus.length - 1] as (typeof corpus)[number];

it("the corpus holds every shape it is meant to: long first prompts, images, tool results, branches, summaries, compactions followed by turns, labels, names, model and thinking changes, 10^4+ entries", () => {
  const all = corpus.flatMap(({ parsed }) => parsed.entries);
  const types = new Set(all.map((e) => e.type));
  for (const type of ["message", "compaction", "branch_summary", "label", "session_info", "model_change", "thinking_level_change", "custom_message", "custom"])
    expect(types, type).toContain(type);
  const roles = new Set(all.filter((e) => e.type === "message").map((e) => (e.message as { role: string }).role));
  expect([...roles].sort()).toEqual(["assistant", "toolResult", "user"]);
  expect(JSON.stringify(all)).toContain('"type":"image"');
  expect(corpus.filter(({ parsed }) => (parsed.firstMessage ?? "").length > 6000).length).toBeGreaterThanOrEqual(3);
  expect(Math.max(...corpus.map(({ parsed }) => parsed.entries.length))).toBeGreaterThanOrEqual(10_000);
  expect(corpus.every(({ parsed }) => parsed.offPath > 0)).toBe(true);
  // On the leaf's path of some session: more than one compaction, with messages after the last.
  const deep = corpus.some(({ parsed }) => {
    const byId = new Map(parsed.entries.map((e) => [e.id, e]));
    const onPath = parsed.pathToLeaf.map((id) => byId.get(id)!);
    const compactions = onPath.flatMap((e, i) => (e.type === "compaction" ? [i] : []));
    return compactions.length >= 2 && onPath.slice(compactions.at(-1)! + 1).some((e) => e.type === "message");
  });
  expect(deep).toBe(true);
});

describe("listing entry points", () => {
  it("listSessions, listAll, listRecentSessions, getRecentSessions (explicit and managed), twice (the second from the index)", async () => {
    for (let round = 0; round < 2; round++) {
      expectAllRows((await listSessions(explicitDir, { cache: false })).sessions, `listSessions explicit #${round}`);
      expectAllRows((await listRecentSessions(explicitDir, 100, { cache: false })).sessions, `listRecentSessions #${round}`);
      expectAllRows(await getRecentSessions(explicitDir, 100, undefined, { cache: false }), `getRecentSessions #${round}`);
      expectAllRows((await listAll(path.dirname(scopeDir), { cache: false })).sessions, `listAll #${round}`);
    }
    expect(await findMostRecentSession(explicitDir)).toBe(path.join(explicitDir, newest().session.name));
  });

  it("SessionManager.list (managed and explicit) and listAll", async () => {
    expectAllRows(await SessionManager.list(workspace, undefined, undefined, { agentDir }), "list managed");
    expectAllRows(await SessionManager.list(workspace, explicitDir), "list explicit");
    expectAllRows(await SessionManager.listAll(undefined, agentDir), "listAll");
  });

  it("/pi list: the same counts and first messages", async () => {
    const rows = await PiSessionManager.list(workspace, explicitDir);
    expect(rows).toHaveLength(corpus.length);
    for (const { session, parsed } of corpus) {
      const row = rows.find((r) => r.id === session.id);
      expect({ count: row?.messageCount, first: row?.firstMessage }, session.name).toEqual({ count: parsed.messageCount, first: parsed.firstMessage });
    }
  });

  it("resolveResumableSession finds each session by a 13-character id prefix", async () => {
    for (const { session } of corpus) {
      const match = await resolveResumableSession(session.id.slice(0, 13), workspace, explicitDir);
      expect(match?.session.id, session.name).toBe(session.id);
    }
  });
});

describe.each(["managed", "explicit"] as const)("opening each session (%s directory)", (where) => {
  const dirOf = () => (where === "managed" ? scopeDir : explicitDir);
  const extra = () => (where === "managed" ? { ...options, agentDir } : options);

  it.each([0, 1, 2, 3, 4, 5])("session %i: read-only and writable opens hold every entry, the leaf and its path; closing changes no byte", async (index) => {
    const { session, parsed } = corpus[index]!;
    const file = path.join(dirOf(), session.name);
    for (const readOnly of [true, false]) {
      const manager = await SessionManager.open(file, dirOf(), undefined, undefined, undefined, { ...extra(), readOnly });
      expect(manager.getSessionId()).toBe(session.id);
      expect(manager.getLeafId()).toBe(parsed.leafId);
      expect(manager.getBranch().map((e) => e.id)).toEqual(parsed.pathToLeaf);
      expect(manager.getEntries().map((e) => e.id)).toEqual(parsed.entries.map((e) => e.id));
      // Entries off the leaf's path too, each by id.
      for (const entry of parsed.entries) expect(manager.getEntry(entry.id as string)?.type).toBe(entry.type);
      expect(manager.buildSessionContext().messages.length).toBeGreaterThan(0);
      await manager.close();
      expect(fs.readFileSync(file, "utf8"), `${readOnly ? "read-only" : "writable"} open`).toBe(session.text);
    }
  });
});

describe("resume entry points", () => {
  it("continueRecent (main and /pi) resumes the newest session whole", async () => {
    const { session, parsed } = newest();
    const main = await SessionManager.continueRecent(workspace, explicitDir, undefined, undefined, undefined, options);
    expect(main.getSessionId()).toBe(session.id);
    expect(main.getEntries()).toHaveLength(parsed.entries.length);
    const context = main.buildSessionContext().messages;
    await main.close();
    const pi = PiSessionManager.continueRecent(workspace, explicitDir, options);
    expect(pi.getSessionId()).toBe(session.id);
    expect(pi.getEntries()).toHaveLength(parsed.entries.length);
    expect(pi.buildSessionContext().messages).toEqual(context);
    await pi.close();
    expect(fs.readFileSync(path.join(explicitDir, session.name), "utf8")).toBe(session.text);
  });

  it("/pi open and loadEntriesFromFile give every entry", async () => {
    for (const { session, parsed } of corpus) {
      const file = path.join(explicitDir, session.name);
      expect(await loadEntriesFromFile(file)).toHaveLength(parsed.entries.length + 1);
      const pi = PiSessionManager.open(file, explicitDir, undefined, options);
      expect(pi.getEntries().map((e) => e.id)).toEqual(parsed.entries.map((e) => e.id));
      expect(pi.getLeafId()).toBe(parsed.leafId);
      await pi.close();
      expect(fs.readFileSync(file, "utf8"), session.name).toBe(session.text);
    }
  });
});
