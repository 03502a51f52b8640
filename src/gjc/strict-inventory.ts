/**
 * GJC's strict session inventory: every transcript of one session directory, each read once
 * through one descriptor and checked (a session header, an id, the workspace asked about), for a
 * caller about to authorise something destructive (GJC's ACP delete). Fail-closed: one failure
 * anywhere and the result carries failures only, never a partial candidate list; only a
 * directory that is confirmed missing is an empty inventory. Failure messages are fixed phrases,
 * never an errno or a path (the path rides in its own field).
 */
import path from "node:path";

import { canonicalizeTrustedPath } from "../scope/index.js";
import type { SessionStorageSnapshot, SessionStorageStat } from "./storage-types.js";

/** Which step refused a candidate, or the directory. */
export type StrictInventoryFailureKind = "root" | "scan" | "lstat" | "read" | "parse" | "stat" | "header" | "cwd" | "containment" | "identity";

/** One refusal; `message` is a fixed phrase. */
export interface StrictInventoryFailure {
  kind: StrictInventoryFailureKind;
  message: string;
  path?: string;
}

/** A transcript that passed every check, with the identity of the object read. */
export interface StrictInventoryCandidate {
  /** Absolute transcript path. */
  path: string;
  /** The header's session id and cwd. */
  id: string;
  cwd: string;
  /** The metadata of the descriptor the bytes were read through. */
  identity: SessionStorageStat;
}

/** `complete` with every candidate, or `failure` with every refusal and no candidates. */
export type StrictInventoryResult = { kind: "complete"; candidates: StrictInventoryCandidate[] } | { kind: "failure"; failures: StrictInventoryFailure[] };

/** What the inventory needs of a storage: a scan that never hides an error, and descriptor snapshots. */
export interface StrictInventoryStorage {
  listFilesStrictSync?(dir: string, pattern: string): string[];
  readSnapshotSync?(file: string): SessionStorageSnapshot;
}

/**
 * The paths of the regular files of `dir` whose names match `pattern` (`*` any run, `?` one
 * character; hidden names never), sorted, from a listing `names` that threw rather than hid an
 * error.
 */
export function matchingPaths(dir: string, names: readonly string[], pattern: string): string[] {
  const source = pattern
    .replace(/[.+^${}()|[\]\\]/g, "\\$&")
    .replace(/\*/g, ".*")
    .replace(/\?/g, ".");
  const glob = new RegExp(`^${source}$`, "s");
  return names.filter((name) => !name.startsWith(".") && glob.test(name)).map((name) => path.join(dir, name));
}

/** GJC's forgiving listing over a strict one: a missing directory lists nothing; any other failure still throws. */
export function listingOrNone(strict: () => string[]): string[] {
  try {
    return strict();
  } catch (error) {
    if (reasonOf(error) === "missing") return [];
    throw error;
  }
}

/** See the module comment. `sessionDir` is the directory to take stock of. */
export function inventorySessionsStrict(cwd: string, sessionDir: string, storage: StrictInventoryStorage): StrictInventoryResult {
  if (typeof storage.listFilesStrictSync !== "function") {
    return { kind: "failure", failures: [{ kind: "scan", message: "Strict scoped session scan is unavailable", path: sessionDir }] };
  }
  let files: string[];
  try {
    files = storage.listFilesStrictSync(sessionDir, "*.jsonl");
  } catch (error) {
    const reason = reasonOf(error);
    if (reason === "missing") return { kind: "complete", candidates: [] };
    const failure: StrictInventoryFailure =
      reason === "root" || reason === "link"
        ? { kind: "root", message: "Scoped session root could not be inspected", path: sessionDir }
        : { kind: "scan", message: "Scoped session directory scan failed", path: sessionDir };
    return { kind: "failure", failures: [failure] };
  }
  const expectedCwd = canonicalizeTrustedPath(cwd);
  const failures: StrictInventoryFailure[] = [];
  const candidates: StrictInventoryCandidate[] = [];
  for (const file of files) {
    const checked = candidateOf(storage, file, path.resolve(sessionDir), expectedCwd);
    if ("kind" in checked) failures.push(checked);
    else candidates.push(checked);
  }
  return failures.length > 0 ? { kind: "failure", failures } : { kind: "complete", candidates };
}

function candidateOf(storage: StrictInventoryStorage, file: string, dir: string, expectedCwd: string): StrictInventoryCandidate | StrictInventoryFailure {
  const absolute = path.resolve(file);
  if (path.dirname(absolute) !== dir) return { kind: "containment", message: "Candidate is outside the scoped session directory", path: file };
  if (typeof storage.readSnapshotSync !== "function") return { kind: "read", message: "Storage backend cannot read exact bytes", path: file };
  let snapshot: SessionStorageSnapshot;
  try {
    snapshot = storage.readSnapshotSync(absolute);
  } catch (error) {
    return reasonOf(error) === "link"
      ? { kind: "lstat", message: "Candidate is a symlink", path: file }
      : { kind: "read", message: "Candidate could not be read", path: file };
  }
  if (!snapshot.stat.isFile) return { kind: "lstat", message: "Candidate is not a regular file", path: file };
  const { bytes } = snapshot;
  const end = bytes.indexOf(0x0a);
  let header: Record<string, unknown> | undefined;
  try {
    const value: unknown = JSON.parse(Buffer.from(bytes.buffer, bytes.byteOffset, end === -1 ? bytes.byteLength : end).toString("utf8"));
    header = typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    header = undefined;
  }
  if (header === undefined) return { kind: "parse", message: "Candidate header is not valid JSON", path: file };
  if (header.type !== "session") return { kind: "header", message: "Candidate header is not a session header", path: file };
  if (typeof header.id !== "string" || header.id.length === 0) return { kind: "identity", message: "Candidate header is missing a session id", path: file };
  if (typeof header.cwd !== "string") return { kind: "cwd", message: "Candidate header is missing a cwd", path: file };
  if (canonicalizeTrustedPath(header.cwd) !== expectedCwd) return { kind: "cwd", message: "Candidate cwd does not match the scoped workspace", path: file };
  return { path: absolute, id: header.id, cwd: header.cwd, identity: snapshot.stat };
}

/** What a thrown scan or read error means: the directory confirmed missing, unreachable or not one, a link, or anything else. */
function reasonOf(error: unknown): "missing" | "root" | "link" | "other" {
  const fields = typeof error === "object" && error !== null ? (error as { code?: unknown; errno?: unknown }) : {};
  const codes = new Set([fields.code, fields.errno].filter((value): value is string => typeof value === "string"));
  if (codes.has("ENOENT") || codes.has("not_found")) return "missing";
  if (["ELOOP", "symlink_refused"].some((code) => codes.has(code))) return "link";
  if (["EACCES", "EPERM", "ENOTDIR", "permission_denied", "not_directory", "unsafe_entry"].some((code) => codes.has(code))) return "root";
  return "other";
}
