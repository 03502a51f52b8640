/**
 * Value types shared by SecureDir and SecureFile.
 */
import type { AclEvidence, NativeEntryType } from "../native/index.js";

/**
 * What a successful verify proved about ACLs: `absent` (no ACL stored) or `unsupported`
 * (the filesystem cannot store one, accepted only because every other check on the same
 * descriptor passed). `defaultAcl` is `not_applicable` for files.
 */
export interface VerifyEvidence {
  readonly accessAcl: AclEvidence;
  readonly defaultAcl: AclEvidence;
}

/** Object type, as the OS reports it (links are never followed). */
export type EntryType = NativeEntryType;

/** One directory entry. */
export interface SecureDirEntry {
  readonly name: string;
  readonly type: EntryType;
}

/**
 * Metadata of an entry or an open object. `dev` and `ino` are decimal strings because
 * they do not fit a double; `mode` holds the permission bits (07777) only.
 */
export interface SecureStat {
  readonly type: EntryType;
  readonly dev: string;
  readonly ino: string;
  readonly size: number;
  readonly nlink: number;
  readonly mode: number;
  readonly uid: number;
  readonly mtimeMs: number;
  readonly ctimeMs: number;
}

/** Data accepted by writes: bytes, or a string written as UTF-8. */
export type SecureData = Uint8Array | string;
