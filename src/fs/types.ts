/** Value types of SecureDir and SecureFile: the addon's own shapes, named for the public API. */
import type { NativeDirEntry, NativeEntryType, NativeEvidence, NativeExactStat, NativeStat } from "../native/index.js";

/**
 * What a verify proved about ACLs: `absent`, or `unsupported` (the filesystem cannot store
 * one; accepted because every other check passed). `defaultAcl` is `not_applicable` for files.
 */
export type VerifyEvidence = NativeEvidence;

/** Object type, as the OS reports it (links are never followed). */
export type EntryType = NativeEntryType;

/** One directory entry: `{ name, type }`. */
export type SecureDirEntry = NativeDirEntry;

/** Metadata of an entry or open object; `dev`/`ino` are decimal strings (too wide for a double), `mode` the 07777 bits. */
export type SecureStat = NativeStat;

/** A {@link SecureStat} with exact times (`atimeNs`, `mtimeNs`, `ctimeNs`: decimal nanoseconds since 1970). */
export type ExactStat = NativeExactStat;

/** Data accepted by writes: bytes, or a string written as UTF-8. */
export type SecureData = Uint8Array | string;
