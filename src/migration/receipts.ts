/**
 * The internal protocol records of a scope: committed migration receipts (which legacy source was copied to which v2
 * transcript) and tombstones (sources retired on purpose), under `<scope>/.gjc-managed-session-internal/` as canonical
 * compact JSON with a trailing LF, published without replacing anything: a record, once written, is final.
 */
import { createHash } from "node:crypto";

import { SecureFsError, type SecureDir, type SecureFile } from "../fs/index.js";
import { INTERNAL_DIRECTORY } from "../scope/index.js";
import type { FileIdentity, HeaderFacts } from "./session-file.js";

/** Subdirectories of the internal directory. */
export const LOCKS_DIRECTORY = "locks";
export const RECEIPTS_DIRECTORY = "receipts";
export const TOMBSTONES_DIRECTORY = "tombstones";

/** Records are small; more bytes than this are not a record. */
const RECORD_MAX_BYTES = 64 * 1024 * 1024;

/** One entry of an artifact manifest (paths `/`-separated, relative to the artifact root). */
export type ManifestEntry =
  { readonly kind: "directory"; readonly path: string } | { readonly kind: "file"; readonly path: string; readonly size: number; readonly sha256: string };

/** A committed migration: the exact source version and where its copy was published. */
export interface MigrationReceipt {
  readonly schemaVersion: 2;
  readonly state: "committed";
  readonly policy: "copy-retain";
  readonly attemptId: string;
  readonly scope: string;
  readonly source: {
    readonly path: string;
    readonly sessionId: string;
    readonly header: HeaderFacts;
    readonly identity: FileIdentity;
    readonly sha256: string;
  };
  readonly destination: { readonly path: string; readonly sessionId: string; readonly header: HeaderFacts; readonly sha256: string };
  readonly artifactManifest: readonly ManifestEntry[];
}

/** A retired source: never migrated or listed again. Not evidence that anything was deleted. */
export interface Tombstone {
  readonly schemaVersion: 2;
  readonly state: "retired";
  readonly scope: string;
  readonly targets: readonly {
    readonly path: string;
    readonly sessionId: string;
    readonly cwd: string;
    readonly provenance: "v2" | "legacy";
    readonly identity: FileIdentity;
  }[];
}

/** Lock name of a source: keyed by where it is and which inode, not by its bytes. */
export function sourceLockName(identity: Pick<FileIdentity, "canonicalPath" | "dev" | "ino">): string {
  return `${hex([identity.canonicalPath, identity.dev, identity.ino])}.lock`;
}

/** Operation id of one source version: path, inode, size, mtime and content. */
export function operationId(identity: FileIdentity): string {
  return hex([identity.canonicalPath, identity.dev, identity.ino, String(identity.size), identity.mtimeNs, identity.sha256]);
}

function hex(parts: readonly string[]): string {
  return createHash("sha256").update(parts.join("\0"), "utf8").digest("hex");
}

/** Canonical bytes of a record. */
export function encodeRecord(record: MigrationReceipt | Tombstone): string {
  return `${JSON.stringify(record)}\n`;
}

/** Publishes `record` as `name` of `dir`, replacing nothing: one already there is final, so that is no error. */
export async function writeRecord(dir: SecureDir, name: string, record: MigrationReceipt | Tombstone): Promise<void> {
  try {
    await dir.writeFileAtomicAsync(name, encodeRecord(record), { noReplace: true });
  } catch (error) {
    if (!(error instanceof SecureFsError) || error.code !== "already_exists") throw error;
  }
}

/** The canonical receipt or tombstone the open `file` holds; anything else (too large, not JSON, not canonical) is none, never trusted. */
export function readRecordFile(file: SecureFile): MigrationReceipt | Tombstone | undefined {
  let text: string;
  try {
    text = file.readAll({ maxBytes: RECORD_MAX_BYTES }).toString("utf8");
  } catch (error) {
    if (error instanceof SecureFsError && error.code === "too_large") return undefined;
    throw error;
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  return (isReceipt(value) || isTombstone(value)) && encodeRecord(value) === text ? value : undefined;
}

/** Every record `isRecord` accepts in `<internal>/<sub>` of the held scope directory, read without following links; a missing directory holds none. */
export function readRecords<T extends MigrationReceipt | Tombstone>(
  scopeDir: SecureDir,
  sub: typeof RECEIPTS_DIRECTORY | typeof TOMBSTONES_DIRECTORY,
  isRecord: (value: MigrationReceipt | Tombstone) => value is T,
): T[] {
  let dir: SecureDir;
  try {
    dir = scopeDir.openDir([INTERNAL_DIRECTORY, sub]);
  } catch (error) {
    if (error instanceof SecureFsError && error.code === "not_found") return [];
    throw error;
  }
  const records: T[] = [];
  try {
    for (const { name } of dir.list()) {
      if (!name.endsWith(".json") || name.startsWith(".")) continue;
      let file: SecureFile | undefined;
      try {
        file = dir.openFile(name);
        const record = readRecordFile(file);
        if (record !== undefined && isRecord(record)) records.push(record);
      } catch (error) {
        if (!(error instanceof SecureFsError)) throw error;
      } finally {
        file?.close();
      }
    }
  } finally {
    dir.close();
  }
  return records;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function isIdentity(value: unknown): value is FileIdentity {
  return (
    isObject(value) &&
    typeof value.canonicalPath === "string" &&
    typeof value.dev === "string" &&
    typeof value.ino === "string" &&
    typeof value.sha256 === "string"
  );
}

/** Shape check of a committed receipt. */
export function isReceipt(value: unknown): value is MigrationReceipt {
  if (!isObject(value) || value.schemaVersion !== 2 || value.state !== "committed" || value.policy !== "copy-retain") return false;
  const { source, destination } = value;
  return (
    typeof value.scope === "string" &&
    isObject(source) &&
    typeof source.path === "string" &&
    isIdentity(source.identity) &&
    isObject(destination) &&
    typeof destination.path === "string" &&
    typeof destination.sessionId === "string" &&
    Array.isArray(value.artifactManifest)
  );
}

/** Shape check of a tombstone. */
export function isTombstone(value: unknown): value is Tombstone {
  return (
    isObject(value) &&
    value.schemaVersion === 2 &&
    value.state === "retired" &&
    typeof value.scope === "string" &&
    Array.isArray(value.targets) &&
    value.targets.every((t) => isObject(t) && typeof t.path === "string" && isIdentity(t.identity))
  );
}
