/**
 * Every call the race and plant tests make into the library, one small function per entry
 * point. The tests and the harness reach the library only through this file, so a change of
 * the public signatures is adapted here alone. Each operation resolves to an
 * {@link OpOutcome}; a thrown error is left to the caller, which tells typed refusals
 * ({@link isTypedRefusal}) from anything else.
 */
import { randomUUID } from "node:crypto";
import fs from "node:fs";
import path from "node:path";

import {
  auditAgentDir,
  GjcError,
  HistoryStorage,
  listSessionCandidates,
  openCandidateForWrite,
  resolveManagedScope,
  SessionManager,
  SESSIONS_DIRECTORY,
  type SessionCandidate,
} from "../../src/index.js";
import { BINDING_FILE_NAME, INTERNAL_DIRECTORY } from "../../src/scope/index.js";
import { operationId, RECEIPTS_DIRECTORY, LOCKS_DIRECTORY, sourceLockName } from "../../src/migration/index.js";
import { assistant, user } from "../manager/helpers.js";
import { writeLegacySession } from "../migration/fixtures.js";

/** What one call returned: its result as text (searched for outside content), or a typed failure result. */
export type OpOutcome = { readonly kind: "ok"; readonly visible: string } | { readonly kind: "refused"; readonly code: string };

/** The terminal the sessions record breadcrumbs for (so every create also writes `terminal-sessions/`). */
export const TERMINAL_ID = "race-terminal";

/** A canonical base64 image above the externalization threshold: every create also writes a blob. */
const IMAGE = Buffer.alloc(2048, 7).toString("base64");

/** True for an error the library throws on purpose: a `GjcError` subclass with a string `code`. */
export function isTypedRefusal(error: unknown): error is Error & { code: string } {
  return error instanceof GjcError && typeof error.code === "string";
}

const ok = (value: unknown): OpOutcome => ({ kind: "ok", visible: JSON.stringify(value) ?? "" });
const refused = (code: string): OpOutcome => ({ kind: "refused", code });

/**
 * A new managed session of `cwd` (scope creation on first use), persisted by its first
 * answer: a user message with a large image (a blob), an assistant message, the breadcrumb.
 */
export async function createAndWrite(agentDir: string, cwd: string, text = "inside prompt"): Promise<OpOutcome> {
  const manager = SessionManager.create(cwd, undefined, undefined, { agentDir, terminalId: TERMINAL_ID });
  try {
    manager.appendMessage({
      role: "user",
      content: [
        { type: "text", text },
        { type: "image", data: IMAGE, mimeType: "image/png" },
      ],
      timestamp: 1,
    } as never);
    manager.appendMessage(assistant(`answer to ${text}`));
    await manager.flush();
    return ok(manager.getSessionFile());
  } finally {
    await manager.close();
  }
}

/** Opens the existing session file `file` for writing, appends one exchange, closes. */
export async function openAndAppend(agentDir: string, file: string): Promise<OpOutcome> {
  const manager = await SessionManager.open(file, path.dirname(file), undefined, undefined, undefined, { agentDir, terminalId: TERMINAL_ID });
  try {
    manager.appendMessage(user("appended"));
    manager.appendMessage(assistant("ok"));
    await manager.flush();
    return ok(manager.getEntries());
  } finally {
    await manager.close();
  }
}

/** `SessionManager.continueRecent` of `cwd`'s managed scope (reads this terminal's breadcrumb), closed again. */
export async function continueRecent(agentDir: string, cwd: string): Promise<OpOutcome> {
  const manager = await SessionManager.continueRecent(cwd, undefined, undefined, undefined, undefined, { agentDir, terminalId: TERMINAL_ID });
  try {
    return ok(manager.getEntries());
  } finally {
    await manager.close();
  }
}

/** `SessionManager.list` of the managed scope of `cwd`. */
export async function list(agentDir: string, cwd: string): Promise<OpOutcome> {
  return ok(await SessionManager.list(cwd, undefined, undefined, { agentDir }));
}

/** `SessionManager.listAll` of every scope below the agent dir. */
export async function listAll(agentDir: string): Promise<OpOutcome> {
  return ok(await SessionManager.listAll(undefined, agentDir));
}

/** Opens the prompt history, adds one prompt, writes it, closes. */
export async function historyAdd(agentDir: string, prompt: string, cwd = "/race"): Promise<OpOutcome> {
  const history = HistoryStorage.open(path.join(agentDir, "history.db"));
  try {
    await history.add(prompt, cwd);
    return ok(null);
  } finally {
    HistoryStorage.resetInstance();
  }
}

/** Opens the prompt history, searches it, closes. */
export async function historySearch(agentDir: string, query: string): Promise<OpOutcome> {
  const history = HistoryStorage.open(path.join(agentDir, "history.db"));
  try {
    return ok(history.search(query, 50));
  } finally {
    HistoryStorage.resetInstance();
  }
}

/** The candidates of `cwd`'s workspace (v2 and legacy), or a typed failure. */
async function candidatesOf(agentDir: string, cwd: string) {
  const resolved = resolveManagedScope({ cwd, agentDir });
  if (resolved.kind === "error") return resolved;
  const listing = await listSessionCandidates(resolved.scope);
  if (listing.kind === "error") return listing;
  return { kind: "listed" as const, scope: resolved.scope, candidates: listing.candidates };
}

/** Migrates `cwd`'s first legacy session not migrated yet (or the one at `legacyFile`) into its v2 scope. */
export async function migrate(agentDir: string, cwd: string, legacyFile?: string): Promise<OpOutcome> {
  const found = await candidatesOf(agentDir, cwd);
  if (found.kind === "error") return refused(found.code);
  const pick = (c: SessionCandidate) => (legacyFile === undefined ? c.migrationState === "legacy_unmigrated" : c.path === legacyFile);
  const candidate = found.candidates.find(pick);
  if (candidate === undefined) return ok({ candidates: found.candidates, opened: null });
  const opened = await openCandidateForWrite(found.scope, candidate, { waitMs: 2_000 });
  if (opened.kind === "error") return refused(opened.code);
  return ok({ candidates: found.candidates, opened });
}

/**
 * Runs what removes a killed migration's staging for the legacy session `legacyFile` of
 * `cwd` (left by {@link plantStaging}): migrating that session again.
 */
export async function cleanupStaging(agentDir: string, cwd: string, legacyFile: string): Promise<OpOutcome> {
  return migrate(agentDir, cwd, legacyFile);
}

/** `auditAgentDir` without repairs. */
export async function audit(agentDir: string): Promise<OpOutcome> {
  return ok(auditAgentDir(agentDir));
}

/** The directory holding the managed sessions of every scope. */
export function sessionsRootOf(agentDir: string): string {
  return path.join(agentDir, SESSIONS_DIRECTORY);
}

/** The v2 scope directory of `cwd` below `agentDir`, created owner-only (with its binding) when missing. */
export function ensureScopeDir(agentDir: string, cwd: string): string {
  const resolved = resolveManagedScope({ cwd, agentDir, mode: "write" });
  if (resolved.kind === "error") throw new Error(`scope of ${cwd}: ${resolved.code}/${resolved.cause}`);
  return resolved.scope.directoryPath;
}

/** The name the scope directory of `cwd` has below any sessions root. */
export function scopeNameOf(agentDir: string, cwd: string): string {
  return path.basename(ensureScopeDir(agentDir, cwd));
}

/** Writes a legacy-layout transcript of `cwd` below the agent dir (loose modes, as older tools left them); returns its path. */
export function writeLegacy(agentDir: string, cwd: string, options: { id?: string; fileName?: string; text?: string } = {}): string {
  const file = writeLegacySession(sessionsRootOf(agentDir), cwd, { lines: 3, ...(options.id === undefined ? {} : { id: options.id }) });
  if (options.fileName === undefined && options.text === undefined) return file;
  const target = path.join(path.dirname(file), options.fileName ?? path.basename(file));
  const body = fs.readFileSync(file, "utf8").replace(/line \d+/g, options.text ?? "$&");
  fs.rmSync(file);
  fs.writeFileSync(target, body, { mode: 0o644 });
  return target;
}

/** What {@link plantStaging} left. */
export interface PlantedStaging {
  /** The scope directory holding the staging entries. */
  readonly scopeDir: string;
  /** The staged artifact directory (a tree of files), the staged transcript, the staged receipt. */
  readonly artifacts: string;
  readonly transcript: string;
  readonly receipt: string;
}

/**
 * Leaves in `cwd`'s scope, for each of its legacy sessions `legacyFiles`, what a migration
 * killed after staging leaves: `.gjc-migrate-<op>-<attempt>.artifacts/` (a small tree),
 * `.transcript` beside it and a staged `.receipt` in the receipts directory, all owner-only.
 */
export async function plantStaging(agentDir: string, cwd: string, legacyFiles: readonly string[]): Promise<PlantedStaging[]> {
  const scopeDir = ensureScopeDir(agentDir, cwd);
  const found = await candidatesOf(agentDir, cwd);
  if (found.kind === "error") throw new Error(`candidates of ${cwd}: ${found.code}`);
  const receipts = path.join(scopeDir, INTERNAL_DIRECTORY, RECEIPTS_DIRECTORY);
  fs.mkdirSync(receipts, { recursive: true, mode: 0o700 });
  return legacyFiles.map((legacyFile) => {
    const candidate = found.candidates.find((c) => c.path === legacyFile);
    if (candidate === undefined) throw new Error(`${legacyFile} is not a candidate`);
    const attempt = `.gjc-migrate-${operationId(candidate.identity).slice(0, 16)}-${randomUUID()}`;
    const artifacts = path.join(scopeDir, `${attempt}.artifacts`);
    for (const dir of [artifacts, path.join(artifacts, "0"), path.join(artifacts, "0", "deep")]) fs.mkdirSync(dir, { mode: 0o700 });
    for (const file of ["0/a.bash.log", "0/deep/b.bash.log", "c.bash.log"]) fs.writeFileSync(path.join(artifacts, file), "staged", { mode: 0o600 });
    const transcript = path.join(scopeDir, `${attempt}.transcript`);
    fs.writeFileSync(transcript, fs.readFileSync(legacyFile), { mode: 0o600 });
    const receipt = path.join(receipts, `${attempt}.receipt`);
    fs.writeFileSync(receipt, "{}", { mode: 0o600 });
    return { scopeDir, artifacts, transcript, receipt };
  });
}

/** A managed path of the layout, and whether it is a directory or a file there. */
export interface ManagedPath {
  readonly label: string;
  readonly path: string;
  readonly type: "dir" | "file";
}

/**
 * Every managed path of an agent dir seeded with one session of `cwd` (through
 * {@link createAndWrite}), its history, the legacy session `legacyFile` and the staging
 * `staging`: the agent dir, sessions/, the scope dir, its binding, the session file,
 * blobs/ and a blob, terminal-sessions/ and the breadcrumb, history.db and its -wal/-shm
 * (there only while it is open), the legacy dir and file, the migration lock of the legacy
 * file (there only while it migrates) and the staging directory and file.
 */
export async function managedPaths(agentDir: string, cwd: string, legacyFile: string, staging: PlantedStaging): Promise<ManagedPath[]> {
  const scopeDir = ensureScopeDir(agentDir, cwd);
  const session = fs.readdirSync(scopeDir).find((n) => n.endsWith(".jsonl"));
  if (session === undefined) throw new Error("the scope holds no session");
  const blobs = path.join(agentDir, "blobs");
  const blob = firstFile(blobs);
  const found = await candidatesOf(agentDir, cwd);
  if (found.kind === "error") throw new Error(`candidates of ${cwd}: ${found.code}`);
  const legacy = found.candidates.find((c) => c.path === legacyFile);
  if (legacy === undefined) throw new Error(`${legacyFile} is not a candidate`);
  const terminals = path.join(agentDir, "terminal-sessions");
  const history = path.join(agentDir, "history.db");
  return [
    { label: "agent dir", path: agentDir, type: "dir" },
    { label: "sessions/", path: sessionsRootOf(agentDir), type: "dir" },
    { label: "scope dir", path: scopeDir, type: "dir" },
    { label: "binding file", path: path.join(scopeDir, BINDING_FILE_NAME), type: "file" },
    { label: "session file", path: path.join(scopeDir, session), type: "file" },
    { label: "blobs/", path: blobs, type: "dir" },
    { label: "blob", path: blob, type: "file" },
    { label: "terminal-sessions/", path: terminals, type: "dir" },
    { label: "breadcrumb", path: path.join(terminals, TERMINAL_ID), type: "file" },
    { label: "history.db", path: history, type: "file" },
    { label: "history.db-wal", path: `${history}-wal`, type: "file" },
    { label: "history.db-shm", path: `${history}-shm`, type: "file" },
    { label: "legacy dir", path: path.dirname(legacyFile), type: "dir" },
    { label: "legacy file", path: legacyFile, type: "file" },
    { label: "migration lock", path: path.join(scopeDir, INTERNAL_DIRECTORY, LOCKS_DIRECTORY, sourceLockName(legacy.identity)), type: "file" },
    { label: "staging dir", path: staging.artifacts, type: "dir" },
    { label: "staging file", path: staging.transcript, type: "file" },
  ];
}

function firstFile(dir: string): string {
  for (const name of fs.readdirSync(dir).sort()) {
    const p = path.join(dir, name);
    const st = fs.lstatSync(p);
    if (st.isFile()) return p;
    if (st.isDirectory()) return firstFile(p);
  }
  throw new Error(`no file below ${dir}`);
}
