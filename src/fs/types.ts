/**
 * Value types shared by SecureDir and SecureFile. They are the addon's own shapes
 * (src/native), named for the public API.
 */
import type { NativeDirEntry, NativeEntryType, NativeEvidence, NativeExactStat, NativeStat } from "../native/index.js";

/**
 * What a successful verify proved about ACLs: `absent` (no ACL stored) or `unsupported`
 * (the filesystem cannot store one, accepted only because every other check on the same
 * descriptor passed). `defaultAcl` is `not_applicable` for files.
 */
export type VerifyEvidence = NativeEvidence;

/** Object type, as the OS reports it (links are never followed). */
export type EntryType = NativeEntryType;

/** One directory entry: `{ name, type }`. */
export type SecureDirEntry = NativeDirEntry;

/**
 * Metadata of an entry or an open object: `{ type, dev, ino, size, nlink, mode, uid,
 * mtimeMs, ctimeMs }`. `dev` and `ino` are decimal strings because they do not fit a
 * double; `mode` holds the permission bits (07777) only.
 */
export type SecureStat = NativeStat;

/**
 * A {@link SecureStat} of one entry or open object (`SecureDir.stat`, `SecureFile.stat`)
 * with its exact times: `atimeNs`, `mtimeNs`, `ctimeNs`, nanoseconds since 1970 as decimal
 * strings (a double cannot hold them).
 */
export type ExactStat = NativeExactStat;

/** Data accepted by writes: bytes, or a string written as UTF-8. */
export type SecureData = Uint8Array | string;
