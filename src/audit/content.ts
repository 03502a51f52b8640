/**
 * What the objects hold: session files (headers, lines, versions, blob references), the blob store (names, hashes,
 * references), staging files left behind, scope bindings and legacy sessions not yet migrated. Runs inside the walk on
 * files that passed the owner-only open, so nothing here reads through a link or a foreign object.
 */
import { createHash } from "node:crypto";

import { SecureFsError, unlessMissing, type SecureDir, type SecureFile } from "../fs/index.js";
import { readRecordFile, RECEIPTS_DIRECTORY, TOMBSTONES_DIRECTORY } from "../migration/index.js";
import { BINDING_FILE_NAME, decodeBinding, INTERNAL_DIRECTORY, isScopeDirectoryName, scopeDigest, SCOPE_DIRECTORY_PREFIX } from "../scope/index.js";
import { resolveBlobRefs, SessionFormatError, SessionLoader, type SessionLoadResult } from "../session/index.js";
import { removeIdleStaging, stagingOwner } from "../storage/stale-staging.js";
import { FindingCollector } from "./collector.js";
import { inLayout } from "./layout.js";
import type { AuditObjectType, AuditRepair } from "./schema.js";
import type { UndoLog } from "./undo.js";

/** How many unparseable lines are listed one by one per file; the rest are summed up. */
export const MAX_LINE_FINDINGS_PER_FILE = 100;
/** Staging files older than this (by mtime) are reported as stale, by default. */
export const DEFAULT_STALE_AFTER_MS = 60 * 60 * 1000;

// One read buffer per audit, reused for every file: most sessions fit in one read.
const CHUNK_BYTES = 256 * 1024;
// A canonical binding is a few hundred bytes; anything this large is not one.
const BINDING_MAX_BYTES = 64 * 1024;
const BLOB_NAME = /^[0-9a-f]{64}$/;
// `.gjc-tmp-<hex>` from the fs layer's atomic writes, `.<name>.<hex>.tmp` from the storage layer.
// `.gjc-migrate-*` from a migration's copy before it is published.
const STAGING_NAME = /^(?:\.gjc-tmp-[0-9a-f]{16}|\..+\.[0-9a-f]{16}\.tmp|\.gjc-migrate-.+)$/;

/** The file version a receipt or tombstone settles a legacy session by: device, inode and size. */
function versionKey(st: { dev: string; ino: string; size: number }): string {
  return `${st.dev}:${st.ino}:${st.size}`;
}

/** Content checks of one audit run, and its findings. */
export class ContentChecks {
  readonly collector = new FindingCollector();
  /** Whether safe findings are repaired. */
  readonly fix: boolean;
  readonly #staleAfterMs: number;
  readonly #now: number;
  readonly #refs = new Map<string, { rel: string; entryId: string | undefined }[]>();
  readonly #blobs = new Map<string, string>();
  /** scope directories walked, and whether their binding file was seen */
  readonly #scopes = new Map<string, boolean>();
  /** legacy-layout sessions (`sessions/<not a scope>/*.jsonl`) by version key */
  readonly #legacy: { rel: string; key: string }[] = [];
  /** versions a committed receipt or a tombstone accounts for */
  readonly #settled = new Set<string>();
  readonly #scratch = Buffer.allocUnsafe(CHUNK_BYTES);
  /** Examined objects by kind (every entry the walk met, and the root once it is open). */
  directories = 0;
  files = 0;
  sessions = 0;
  blobs = 0;

  /** Where `fix` writes each old mode before it changes it. */
  readonly undo: UndoLog | undefined;

  constructor(options: { staleAfterMs: number; now: number; fix: boolean; undo?: UndoLog }) {
    this.fix = options.fix;
    this.undo = options.undo;
    this.#staleAfterMs = options.staleAfterMs;
    this.#now = options.now;
  }

  /** A directory that passed the owner-only open (or was repaired), before its entries. */
  directory(rel: string, segments: readonly string[]): void {
    if (rel === ".") this.directories += 1;
    const [top, scope] = segments;
    if (top === "sessions" && segments.length === 2 && isScopeDirectoryName(scope as string)) this.#scopes.set(scope as string, false);
  }

  /** Every entry, before anything is opened (names alone decide staging files). */
  entry(dir: SecureDir, name: string, rel: string, type: AuditObjectType): void {
    if (type === "directory") this.directories += 1;
    else this.files += 1;
    if (name === BINDING_FILE_NAME) {
      const parts = rel.split("/");
      if (parts.length === 3 && parts[0] === "sessions" && this.#scopes.has(parts[1] as string)) this.#scopes.set(parts[1] as string, true);
    }
    if ((type !== "file" && type !== "directory") || !STAGING_NAME.test(name)) return;
    // A writer may have swept it since the listing.
    const st = unlessMissing(() => dir.stat(name));
    if (st === undefined) return;
    const age = this.#now - st.mtimeMs;
    if (age <= this.#staleAfterMs) {
      if (this.fix && type === "file") this.#sweepIdle(dir, name, rel);
      return;
    }
    this.collector.add(rel, type, "stale_staging_file", `a temporary file left ${Math.round(age / 60000)} minutes ago`, {
      detail: new Date(st.mtimeMs).toISOString(),
      repairable: type === "file",
    });
    if (this.fix && type === "file" && inLayout(rel)) {
      const repair = removeStaleTemporary(dir, name, rel);
      this.collector.repairs.push(repair);
      if (repair.outcome === "repaired") this.collector.resolve(rel, ["stale_staging_file"]);
    }
  }

  /** With `fix`: a recent temporary of a session no writer holds is a killed rewrite's, swept as its next writer would sweep it. */
  #sweepIdle(dir: SecureDir, name: string, rel: string): void {
    const owner = stagingOwner(dir, name);
    if (owner === undefined || !removeIdleStaging(dir, owner, name)) return;
    this.collector.add(rel, "file", "stale_staging_file", `a temporary a killed rewrite of ${owner} left (no writer holds it)`, { repairable: true });
    this.collector.repairs.push({ path: rel, codes: ["stale_staging_file"], outcome: "repaired" });
    this.collector.resolve(rel, ["stale_staging_file"]);
  }

  /** A regular file that passed the owner-only open; `segments` is its path below the agent dir. */
  file(file: SecureFile, rel: string, segments: readonly string[]): void {
    const [top, dir = "", third, fourth] = segments;
    const name = segments[segments.length - 1] as string;
    if (top === "sessions" && segments.length === 3 && name.endsWith(".jsonl")) {
      if (!dir.startsWith(".") && !isScopeDirectoryName(dir)) {
        this.#legacy.push({ rel, key: versionKey(file.stat()) });
      }
      this.#session(file, rel);
    } else if (top === "blobs" && segments.length === 2 && !STAGING_NAME.test(name)) {
      this.#blob(file, rel, name);
    } else if (top === "sessions" && segments.length === 3 && name === BINDING_FILE_NAME) {
      this.#binding(file, rel, dir);
    } else if (top === "sessions" && segments.length === 5 && isScopeDirectoryName(dir) && third === INTERNAL_DIRECTORY) {
      if (fourth === RECEIPTS_DIRECTORY || fourth === TOMBSTONES_DIRECTORY) this.#settle(file, fourth === RECEIPTS_DIRECTORY);
    }
  }

  /** Reports unsettled legacy sessions, unbound scopes, dangling blob references and, when every session was read, orphan blobs. */
  finish(sessionsComplete: boolean): void {
    for (const { rel, key } of this.#legacy) {
      if (!this.#settled.has(key)) this.collector.add(rel, "file", "legacy_unmigrated", "a legacy-layout session that has not been migrated into a v2 scope");
    }
    for (const [scope, bound] of this.#scopes) {
      if (!bound) this.collector.add(`sessions/${scope}`, "directory", "binding_invalid", "the scope directory has no binding file", { detail: "missing" });
    }
    for (const [digest, users] of this.#refs) {
      if (this.#blobs.has(digest)) continue;
      for (const { rel, entryId } of users) {
        this.collector.add(rel, "file", "dangling_blob_ref", `references blob ${digest}, which is not in the store`, {
          detail: entryId === undefined ? digest : `${digest} (entry ${entryId})`,
        });
      }
    }
    if (!sessionsComplete) return;
    for (const [digest, rel] of this.#blobs) {
      if (!this.#refs.has(digest)) this.collector.add(rel, "file", "orphan_blob", "no session references this blob", { detail: digest });
    }
  }

  /** One session file, loaded in chunks by the library's own loader. */
  #session(file: SecureFile, rel: string): void {
    this.sessions += 1;
    const loader = new SessionLoader();
    let result: SessionLoadResult;
    try {
      // The loader copies what it keeps, so the scratch buffer is reused for every chunk.
      this.#eachChunk(file, (chunk) => loader.write(chunk));
      result = loader.end();
    } catch (error) {
      if (error instanceof SessionFormatError && (error.code === "version_too_new" || error.code === "invalid_version" || error.code === "line_too_long")) {
        this.collector.add(rel, "file", error.code, error.message);
        return;
      }
      throw error;
    }
    if (result.kind === "invalid_header") {
      this.collector.add(rel, "file", "invalid_header", `no usable session header (${result.reason})`, {
        ...(result.line === null ? {} : { line: result.line }),
        detail: result.reason,
      });
      return;
    }
    if (result.kind !== "loaded") return;
    const invalid = result.invalidLines;
    for (const bad of invalid.slice(0, MAX_LINE_FINDINGS_PER_FILE)) {
      this.collector.add(rel, "file", "unparseable_line", `line ${bad.line} holds no usable record`, { line: bad.line, detail: bad.reason });
    }
    const more = invalid.length - MAX_LINE_FINDINGS_PER_FILE;
    if (more > 0) this.collector.add(rel, "file", "unparseable_line", `${more} more unparseable lines`, { detail: String(more) });
    // The lookup answers "missing" for everything: what comes back is the list of references.
    for (const { sha256, entryId } of resolveBlobRefs(result.entries, () => undefined).unresolved) {
      let users = this.#refs.get(sha256);
      if (users === undefined) this.#refs.set(sha256, (users = []));
      users.push({ rel, entryId });
    }
  }

  /** Reads all of `file` into the scratch buffer, one chunk after another. */
  #eachChunk(file: SecureFile, use: (chunk: Buffer) => void): void {
    for (let position = 0; ;) {
      const n = file.read(this.#scratch, { position });
      if (n === 0) return;
      use(this.#scratch.subarray(0, n));
      position += n;
      // A short read of a regular file is its end: saves the second read of every small file.
      if (n < this.#scratch.length) return;
    }
  }

  #binding(file: SecureFile, rel: string, scope: string): void {
    let bytes: Buffer;
    try {
      bytes = file.readAll({ maxBytes: BINDING_MAX_BYTES });
    } catch (error) {
      if (!(error instanceof SecureFsError) || error.code !== "too_large") throw error;
      this.collector.add(rel, "file", "binding_invalid", "the binding file is far too large", { detail: "too_large" });
      return;
    }
    const binding = decodeBinding(bytes);
    if (binding === undefined) {
      this.collector.add(rel, "file", "binding_invalid", "not a canonically encoded scope binding", { detail: "not_canonical" });
      return;
    }
    const digest = scope.slice(SCOPE_DIRECTORY_PREFIX.length);
    if (binding.identityDigest !== digest) {
      this.collector.add(rel, "file", "binding_conflict", "the binding names another scope directory", { detail: binding.identityDigest });
    } else if (scopeDigest(binding.platform, binding.canonicalPath) !== digest) {
      this.collector.add(rel, "file", "binding_conflict", "the workspace path in the binding does not hash to this scope", {
        detail: binding.canonicalPath,
      });
    }
  }

  #blob(file: SecureFile, rel: string, name: string): void {
    this.blobs += 1;
    if (!BLOB_NAME.test(name)) {
      this.collector.add(rel, "file", "invalid_blob_name", "not named by a SHA-256 digest (64 lowercase hex)");
      return;
    }
    this.#blobs.set(name, rel);
    const hash = createHash("sha256");
    this.#eachChunk(file, (chunk) => hash.update(chunk));
    const digest = hash.digest("hex");
    if (digest !== name) this.collector.add(rel, "file", "corrupt_blob", "the bytes do not hash to the name", { detail: digest });
  }

  /** Marks the file versions a committed receipt (its source) or a tombstone (its targets) names as settled. */
  #settle(file: SecureFile, receipt: boolean): void {
    let record;
    try {
      record = readRecordFile(file);
    } catch (error) {
      if (error instanceof SecureFsError) return; // unreadable: it settles nothing
      throw error;
    }
    if (record?.state === "committed" && receipt) this.#settled.add(versionKey(record.source.identity));
    if (record?.state === "retired" && !receipt) for (const { identity } of record.targets) this.#settled.add(versionKey(identity));
  }
}

/**
 * The `--fix` repair of a stale temporary, which a killed atomic write or migration left and nothing refers to (a
 * session or blob is only read under its published name): removed by name on the held descriptor after a no-follow
 * stat there shows a regular file, so a link or directory swapped in is refused, never followed.
 */
function removeStaleTemporary(dir: SecureDir, name: string, rel: string): AuditRepair {
  try {
    if (dir.stat(name).type !== "file") return { path: rel, codes: ["stale_staging_file"], outcome: "refused", reason: "not_regular_file" };
    dir.unlink(name);
    return { path: rel, codes: ["stale_staging_file"], outcome: "repaired" };
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    return { path: rel, codes: ["stale_staging_file"], outcome: "refused", reason: typeof code === "string" ? code : "io_error" };
  }
}
