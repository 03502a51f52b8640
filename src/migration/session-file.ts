/**
 * Reading a session transcript that may live outside managed storage (legacy directories
 * were made by older tools with looser permissions): opened without following a link, checked
 * to be one regular file with one link, and identified by a hash taken between two equal
 * stats, so a file that changes while it is read is never described as stable.
 */
import { createHash } from "node:crypto";
import fs from "node:fs";
import path from "node:path";

import { MigrationError } from "./errors.js";

/** Header prefix bound: the first line must end inside it. */
export const HEADER_MAX_BYTES = 64 * 1024;

/** Read step of whole-file hashing. */
const CHUNK_BYTES = 1 << 20;

const OPEN_FLAGS = fs.constants.O_RDONLY | (fs.constants.O_NOFOLLOW ?? 0) | (fs.constants.O_NONBLOCK ?? 0);

/** What identifies one version of a transcript: where it is, which inode, and its bytes. */
export interface FileIdentity extends StableStat {
  /** Absolute path (`path.resolve`, not canonicalised further). */
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

/** A stat taken with bigint precision, reduced to what must not change. */
export interface StableStat {
  readonly dev: string;
  readonly ino: string;
  readonly nlink: number;
  readonly size: number;
  readonly mtimeNs: string;
  readonly ctimeNs: string;
  readonly mtimeMs: number;
}

/** Reduces a bigint stat to a {@link StableStat}. */
export function stableStat(st: fs.BigIntStats): StableStat {
  return {
    dev: st.dev.toString(),
    ino: st.ino.toString(),
    nlink: Number(st.nlink),
    size: Number(st.size),
    mtimeNs: st.mtimeNs.toString(),
    ctimeNs: st.ctimeNs.toString(),
    mtimeMs: Number(st.mtimeMs),
  };
}

/** True when two stats describe the same unchanged object. */
export function sameStat(a: StableStat, b: StableStat): boolean {
  return a.dev === b.dev && a.ino === b.ino && a.size === b.size && a.mtimeNs === b.mtimeNs && a.ctimeNs === b.ctimeNs && a.nlink === b.nlink;
}

/**
 * Opens `file` for reading: no link followed, a regular file, one link, and the inode the
 * path names right now. Throws {@link MigrationError} `source_changed` (cause `symlink`,
 * `not_regular_file`, `hardlink`, `identity_mismatch`, an errno name) otherwise.
 */
export async function openRegularNoFollow(file: string): Promise<{ handle: fs.promises.FileHandle; stat: StableStat }> {
  let handle: fs.promises.FileHandle;
  try {
    handle = await fs.promises.open(file, OPEN_FLAGS);
  } catch (error) {
    throw sourceOpenFailure((error as NodeJS.ErrnoException).code ?? "io_error");
  }
  try {
    const stat = requireSameRegular(await handle.stat({ bigint: true }), await fs.promises.lstat(file, { bigint: true }));
    return { handle, stat };
  } catch (error) {
    await handle.close();
    throw error;
  }
}

/**
 * The `source_changed` error for a source file that its no-follow open refused with errno
 * name `code` (a link gives `ELOOP`, reported as cause `symlink`).
 */
export function sourceOpenFailure(code: string): MigrationError {
  return new MigrationError("source_changed", code === "ELOOP" ? "symlink" : code, `cannot open a source file (${code})`);
}

/** The stat of an opened file (`held`) once it is proven a single-link regular file that its path (`named`) still names. */
function requireSameRegular(held: fs.BigIntStats, named: fs.BigIntStats): StableStat {
  if (!held.isFile()) throw new MigrationError("source_changed", "not_regular_file", "the session file is not a regular file");
  if (held.nlink !== 1n) throw new MigrationError("source_changed", "hardlink", "the session file has more than one link");
  if (named.dev !== held.dev || named.ino !== held.ino) {
    throw new MigrationError("source_changed", "identity_mismatch", "the session file was replaced while opening");
  }
  return stableStat(held);
}

/** Parses the header from the first bytes of a transcript; undefined when unusable. */
export function parseHeaderPrefix(prefix: Uint8Array): HeaderFacts | undefined {
  const newline = Buffer.from(prefix.buffer, prefix.byteOffset, prefix.byteLength).indexOf(0x0a);
  if (newline < 0) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(prefix.subarray(0, newline)).trim());
  } catch {
    return undefined;
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) return undefined;
  const header = value as Record<string, unknown>;
  if (header.type !== "session" || typeof header.id !== "string" || typeof header.cwd !== "string") return undefined;
  return { id: header.id, cwd: header.cwd };
}

/** Reads a transcript's header (first line within {@link HEADER_MAX_BYTES}), no link followed. */
export async function readHeader(file: string): Promise<HeaderFacts | undefined> {
  const { handle } = await openRegularNoFollow(file);
  try {
    const buffer = Buffer.allocUnsafe(HEADER_MAX_BYTES);
    const { bytesRead } = await handle.read(buffer, 0, HEADER_MAX_BYTES, 0);
    return parseHeaderPrefix(buffer.subarray(0, bytesRead));
  } finally {
    await handle.close();
  }
}

/**
 * The full identity of a transcript: header, stat and SHA-256 of every byte, read in
 * chunks off the event loop. The stat before and after must agree and the byte count must
 * equal the size, else `source_changed`.
 */
export async function identifyTranscript(file: string): Promise<{ header: HeaderFacts | undefined; identity: FileIdentity }> {
  const absolute = path.resolve(file);
  const { handle, stat } = await openRegularNoFollow(absolute);
  try {
    const hash = createHash("sha256");
    const buffer = Buffer.allocUnsafe(CHUNK_BYTES);
    let position = 0;
    let header: HeaderFacts | undefined;
    let prefix: Buffer | undefined;
    for (;;) {
      const { bytesRead } = await handle.read(buffer, 0, CHUNK_BYTES, position);
      if (bytesRead === 0) break;
      const chunk = buffer.subarray(0, bytesRead);
      if (position < HEADER_MAX_BYTES) {
        const take = Buffer.from(chunk.subarray(0, HEADER_MAX_BYTES - position));
        prefix = prefix === undefined ? take : Buffer.concat([prefix, take]);
      }
      hash.update(chunk);
      position += bytesRead;
    }
    if (prefix !== undefined) header = parseHeaderPrefix(prefix);
    const after = stableStat(await handle.stat({ bigint: true }));
    if (!sameStat(stat, after) || position !== stat.size) {
      throw new MigrationError("source_changed", "changed_while_reading", "the session file changed while it was read");
    }
    const sha256 = hash.digest("hex");
    return { header, identity: { canonicalPath: absolute, sessionId: header?.id ?? "", ...stat, sha256 } };
  } finally {
    await handle.close();
  }
}

/** True when two identities name the same bytes of the same inode at the same path. */
export function sameIdentity(a: FileIdentity, b: FileIdentity): boolean {
  return a.canonicalPath === b.canonicalPath && a.dev === b.dev && a.ino === b.ino && a.size === b.size && a.mtimeNs === b.mtimeNs && a.sha256 === b.sha256;
}
