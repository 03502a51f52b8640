/**
 * Reading a transcript by descriptor: a v2 one owner-only, a legacy one by the legacy-source rules (older tools wrote
 * 0644 files in 0755 directories; readable by others is fine, a link, hard link, special file, foreign owner or write
 * access for others is not). A version is hashed between two equal stats of the open descriptor, so a file that
 * changes while read is never called stable.
 */
import { createHash } from "node:crypto";

import { SecureFsError, type EntryPath, type ExactStat, type SecureDir, type SecureFile } from "../fs/index.js";
import { MigrationError } from "./errors.js";

/** Header prefix bound: the first line must end inside it. */
const HEADER_MAX_BYTES = 64 * 1024;

/** Most bytes read per call when copying or hashing. */
export const CHUNK_BYTES = 4 << 20;

/** What identifies one version of a transcript: where it is, which inode, and its bytes. */
export interface FileIdentity extends StableStat {
  /** Absolute path (`path.resolve`, not canonicalised further); a label, never opened. */
  readonly canonicalPath: string;
  readonly sessionId: string;
  /** Lowercase hex SHA-256 of the whole file. */
  readonly sha256: string;
}

/** The fields of a session header that ownership depends on. */
export interface HeaderFacts {
  readonly id: string;
  readonly cwd: string;
}

/** A stat with exact times, reduced to what must not change. */
export interface StableStat {
  readonly dev: string;
  readonly ino: string;
  readonly nlink: number;
  readonly size: number;
  readonly mtimeNs: string;
  readonly ctimeNs: string;
  readonly mtimeMs: number;
}

/** Which rules a transcript is opened by: owner-only (`managed`) or the legacy-source ones. */
export type TranscriptRules = "managed" | "source";

/** Reduces an exact stat to a {@link StableStat}. */
export function stableStat(st: ExactStat): StableStat {
  return { dev: st.dev, ino: st.ino, nlink: st.nlink, size: st.size, mtimeNs: st.mtimeNs, ctimeNs: st.ctimeNs, mtimeMs: st.mtimeMs };
}

/** True when two stats describe the same unchanged object. */
export function sameStat(a: StableStat, b: StableStat): boolean {
  return a.dev === b.dev && a.ino === b.ino && a.size === b.size && a.mtimeNs === b.mtimeNs && a.ctimeNs === b.ctimeNs && a.nlink === b.nlink;
}

/** True when two identities name the same bytes of the same inode at the same path. */
export function sameIdentity(a: FileIdentity, b: FileIdentity): boolean {
  return a.canonicalPath === b.canonicalPath && a.dev === b.dev && a.ino === b.ino && a.size === b.size && a.mtimeNs === b.mtimeNs && a.sha256 === b.sha256;
}

/** fs-layer refusals that say the object is not one migration may read. */
const UNSAFE_CODES: ReadonlySet<string> = new Set([
  "symlink_refused",
  "hardlink_refused",
  "not_regular_file",
  "not_directory",
  "owner_mismatch",
  "mode_mismatch",
  "acl_present",
  "acl_malformed",
  "acl_denied",
  "acl_io_error",
  "acl_unknown",
]);

/** The path-free cause token of an fs-layer refusal: `symlink` and `hardlink` for links, else its code. */
export function refusalCause(error: SecureFsError): string {
  return error.code === "symlink_refused" ? "symlink" : error.code === "hardlink_refused" ? "hardlink" : error.code;
}

/** A refused open of a source object: `unsafe_source` when it is not safe to read, else `source_changed` (cause: the fs code). */
function sourceRefusal(error: unknown): MigrationError {
  if (!(error instanceof SecureFsError)) throw error;
  if (UNSAFE_CODES.has(error.code)) return new MigrationError("unsafe_source", refusalCause(error), `a legacy source is not safe to read (${error.code})`);
  return new MigrationError("source_changed", error.code, `a legacy source changed (${error.code})`);
}

/** Opens directory `name` of `dir` by `rules`; a refusal throws its {@link sourceRefusal}. */
export function openDirByRules(dir: SecureDir, name: string, rules: TranscriptRules): SecureDir {
  try {
    return dir.openDir(name, rules === "source" ? { source: true } : {});
  } catch (error) {
    throw sourceRefusal(error);
  }
}

/** Opens transcript `name` of `dir` by `rules`, with its stat; a refusal throws its {@link sourceRefusal}. */
export function openTranscript(dir: SecureDir, name: EntryPath, rules: TranscriptRules): { file: SecureFile; stat: ExactStat } {
  let file: SecureFile;
  try {
    file = dir.openFile(name, rules === "source" ? { source: true } : {});
  } catch (error) {
    throw sourceRefusal(error);
  }
  try {
    return { file, stat: file.stat() };
  } catch (error) {
    file.close();
    throw sourceRefusal(error);
  }
}

/** Parses the header from the first bytes of a transcript; undefined when unusable. */
export function parseHeaderPrefix(prefix: Buffer): HeaderFacts | undefined {
  const newline = prefix.indexOf(0x0a);
  if (newline < 0) return undefined;
  let header: unknown;
  try {
    header = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(prefix.subarray(0, newline)).trim());
  } catch {
    return undefined;
  }
  if (typeof header !== "object" || header === null || Array.isArray(header)) return undefined;
  const { type, id, cwd } = header as Record<string, unknown>;
  return type === "session" && typeof id === "string" && typeof cwd === "string" ? { id, cwd } : undefined;
}

/** Reads the header of transcript `name` of `dir` (first line within {@link HEADER_MAX_BYTES}). */
export function readHeader(dir: SecureDir, name: string, rules: TranscriptRules): HeaderFacts | undefined {
  const { file } = openTranscript(dir, name, rules);
  try {
    return parseHeaderPrefix(file.readPrefix(HEADER_MAX_BYTES));
  } finally {
    file.close();
  }
}

/**
 * The full identity of transcript `name` of `dir` (labelled `canonicalPath`): header, stat and SHA-256 of every byte;
 * `source_changed` unless the stats before and after agree and the byte count is the size.
 */
export function identifyTranscript(
  dir: SecureDir,
  name: string,
  canonicalPath: string,
  rules: TranscriptRules,
): { header: HeaderFacts | undefined; identity: FileIdentity } {
  const { file, stat: opened } = openTranscript(dir, name, rules);
  try {
    const stat = stableStat(opened);
    const header = parseHeaderPrefix(file.readPrefix(HEADER_MAX_BYTES));
    const { size, sha256 } = hashOpenFile(file, stat.size);
    if (!sameStat(stat, file.stat()) || size !== stat.size) {
      throw new MigrationError("source_changed", "changed_while_reading", "the session file changed while it was read");
    }
    return { header, identity: { canonicalPath, sessionId: header?.id ?? "", ...stat, sha256 } };
  } finally {
    file.close();
  }
}

/** SHA-256 and size of the open `file` (about `sizeHint` bytes), read in chunks; each goes to `onChunk` (with its offset) first. */
export function hashOpenFile(file: SecureFile, sizeHint: number, onChunk?: (chunk: Buffer, position: number) => void): { size: number; sha256: string } {
  const buffer = Buffer.allocUnsafe(Math.min(CHUNK_BYTES, Math.max(sizeHint, 1)));
  const hash = createHash("sha256");
  let position = 0;
  for (let n; (n = file.read(buffer, { position })) > 0; position += n) {
    const chunk = buffer.subarray(0, n);
    onChunk?.(chunk, position);
    hash.update(chunk);
  }
  return { size: position, sha256: hash.digest("hex") };
}
