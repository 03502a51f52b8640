/**
 * What the objects hold: session files (headers, lines, versions, blob references), the
 * blob store (names, hashes, references), staging files left behind, scope bindings and
 * legacy data not yet migrated. Runs inside the walk on files that passed the owner-only
 * open, so nothing here ever reads through a link or a foreign object.
 */
import { createHash } from "node:crypto";

import { SecureFsError, type SecureDir, type SecureFile } from "../fs/index.js";
import { BINDING_FILE_NAME, decodeBinding, isScopeDirectoryName, scopeDigest, SCOPE_DIRECTORY_PREFIX } from "../scope/index.js";
import { resolveBlobRefs, SessionFormatError, SessionLoader, type SessionLoadResult } from "../session/index.js";
import type { FindingCollector } from "./collector.js";
import { LegacyTracker } from "./legacy.js";
import type { AuditObjectType } from "./schema.js";
import { removeStaleTemporary } from "./staging-fix.js";
import type { WalkVisitor } from "./walk.js";

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

/** True for the names the library gives its temporary files before publishing them. */
export function isStagingName(name: string): boolean {
  return STAGING_NAME.test(name);
}

/** Content checks of one audit run. */
export class ContentChecks implements WalkVisitor {
  readonly #collector: FindingCollector;
  readonly #staleAfterMs: number;
  readonly #now: number;
  readonly #fix: boolean;
  readonly #refs = new Map<string, { rel: string; entryId: string | undefined }[]>();
  readonly #blobs = new Map<string, string>();
  /** scope directories walked, and whether their binding file was seen */
  readonly #scopes = new Map<string, boolean>();
  readonly #legacy = new LegacyTracker();
  readonly #scratch = Buffer.allocUnsafe(CHUNK_BYTES);
  /** Examined objects by kind (every entry the walk met, and the root once it is open). */
  directories = 0;
  files = 0;
  sessions = 0;
  blobs = 0;

  constructor(collector: FindingCollector, options: { staleAfterMs: number; now: number; fix?: boolean }) {
    this.#collector = collector;
    this.#fix = options.fix === true;
    this.#staleAfterMs = options.staleAfterMs;
    this.#now = options.now;
  }

  directory(rel: string, segments: readonly string[]): void {
    if (rel === ".") this.directories += 1;
    const [top, scope] = segments;
    if (top === "sessions" && segments.length === 2 && isScopeDirectoryName(scope as string)) this.#scopes.set(scope as string, false);
  }

  entry(dir: SecureDir, name: string, rel: string, type: AuditObjectType): void {
    if (type === "directory") this.directories += 1;
    else this.files += 1;
    if (name === BINDING_FILE_NAME) {
      const parts = rel.split("/");
      if (parts.length === 3 && parts[0] === "sessions" && this.#scopes.has(parts[1] as string)) this.#scopes.set(parts[1] as string, true);
    }
    if ((type !== "file" && type !== "directory") || !isStagingName(name)) return;
    const st = dir.stat(name);
    const age = this.#now - st.mtimeMs;
    if (age > this.#staleAfterMs) {
      this.#collector.add(rel, type, "stale_staging_file", `a temporary file left ${Math.round(age / 60000)} minutes ago`, {
        detail: new Date(st.mtimeMs).toISOString(),
        repairable: type === "file",
      });
      if (this.#fix && type === "file") {
        const repair = removeStaleTemporary(dir, name, rel);
        this.#collector.repairs.push(repair);
        if (repair.outcome === "repaired") this.#collector.resolve(rel, ["stale_staging_file"]);
      }
    }
  }

  file(file: SecureFile, rel: string, segments: readonly string[]): void {
    const name = segments[segments.length - 1] as string;
    this.#legacy.file(file, rel, segments);
    if (segments[0] === "sessions" && segments.length === 3 && name.endsWith(".jsonl")) this.#session(file, rel);
    else if (segments[0] === "blobs" && segments.length === 2 && !isStagingName(name)) this.#blob(file, rel, name);
    else if (segments[0] === "sessions" && segments.length === 3 && name === BINDING_FILE_NAME) {
      this.#binding(file, rel, segments[1] as string);
    }
  }

  /**
   * Reports references to blobs that are not in the store and, when every session file was
   * read (`sessionsComplete`), blobs no session references.
   */
  finish(sessionsComplete: boolean): void {
    this.#legacy.finish(this.#collector);
    for (const [scope, bound] of this.#scopes) {
      if (!bound) this.#collector.add(`sessions/${scope}`, "directory", "binding_invalid", "the scope directory has no binding file", { detail: "missing" });
    }
    for (const [digest, users] of this.#refs) {
      if (this.#blobs.has(digest)) continue;
      for (const { rel, entryId } of users) {
        this.#collector.add(rel, "file", "dangling_blob_ref", `references blob ${digest}, which is not in the store`, {
          detail: entryId === undefined ? digest : `${digest} (entry ${entryId})`,
        });
      }
    }
    if (!sessionsComplete) return;
    for (const [digest, rel] of this.#blobs) {
      if (!this.#refs.has(digest)) this.#collector.add(rel, "file", "orphan_blob", "no session references this blob", { detail: digest });
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
        this.#collector.add(rel, "file", error.code, error.message);
        return;
      }
      throw error;
    }
    if (result.kind === "invalid_header") {
      this.#collector.add(rel, "file", "invalid_header", `no usable session header (${result.reason})`, {
        ...(result.line === null ? {} : { line: result.line }),
        detail: result.reason,
      });
      return;
    }
    if (result.kind !== "loaded") return;
    const invalid = result.invalidLines;
    for (const bad of invalid.slice(0, MAX_LINE_FINDINGS_PER_FILE)) {
      this.#collector.add(rel, "file", "unparseable_line", `line ${bad.line} holds no usable record`, { line: bad.line, detail: bad.reason });
    }
    if (invalid.length > MAX_LINE_FINDINGS_PER_FILE) {
      this.#collector.add(rel, "file", "unparseable_line", `${invalid.length - MAX_LINE_FINDINGS_PER_FILE} more unparseable lines`, {
        detail: String(invalid.length - MAX_LINE_FINDINGS_PER_FILE),
      });
    }
    // The lookup answers "missing" for everything: what comes back is the list of references.
    const { unresolved } = resolveBlobRefs(result.entries, () => undefined);
    for (const { sha256, entryId } of unresolved) {
      let users = this.#refs.get(sha256);
      if (users === undefined) this.#refs.set(sha256, (users = []));
      users.push({ rel, entryId });
    }
  }

  /** Reads all of `file` into the scratch buffer, one chunk after another. */
  #eachChunk(file: SecureFile, use: (chunk: Buffer) => void): void {
    for (let position = 0; ; ) {
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
      this.#collector.add(rel, "file", "binding_invalid", "the binding file is far too large", { detail: "too_large" });
      return;
    }
    const binding = decodeBinding(bytes);
    if (binding === undefined) {
      this.#collector.add(rel, "file", "binding_invalid", "not a canonically encoded scope binding", { detail: "not_canonical" });
      return;
    }
    const digest = scope.slice(SCOPE_DIRECTORY_PREFIX.length);
    if (binding.identityDigest !== digest) {
      this.#collector.add(rel, "file", "binding_conflict", "the binding names another scope directory", { detail: binding.identityDigest });
    } else if (scopeDigest(binding.platform, binding.canonicalPath) !== digest) {
      this.#collector.add(rel, "file", "binding_conflict", "the workspace path in the binding does not hash to this scope", {
        detail: binding.canonicalPath,
      });
    }
  }

  #blob(file: SecureFile, rel: string, name: string): void {
    this.blobs += 1;
    if (!BLOB_NAME.test(name)) {
      this.#collector.add(rel, "file", "invalid_blob_name", "not named by a SHA-256 digest (64 lowercase hex)");
      return;
    }
    this.#blobs.set(name, rel);
    const hash = createHash("sha256");
    this.#eachChunk(file, (chunk) => hash.update(chunk));
    const digest = hash.digest("hex");
    if (digest !== name) this.#collector.add(rel, "file", "corrupt_blob", "the bytes do not hash to the name", { detail: digest });
  }
}
