/** The secure filesystem layer: owner-only directories and files held by descriptor. */
export { SecureDir } from "./secure-dir.js";
export type { EntryPath, LockOptions, OpenDirOptions, OpenFileOptions, RemoveTreeLimits } from "./secure-dir.js";
export { SecureFile } from "./secure-file.js";
export type { ReadOptions } from "./secure-file.js";
export { SecureLock } from "./secure-lock.js";
export type { LockRecord } from "./secure-lock.js";
export { insecureAncestors, nearestInsecureAncestor } from "./ancestors.js";
export { directoryIdentity, isValidEntryName } from "./identity.js";
export type { DirectoryIdentity } from "./identity.js";
export { SECURE_FS_ERROR_CODES, SecureFsError } from "./errors.js";
export { NativeUnavailableError } from "../native/index.js";
export type { AclAttribute, SecureFsErrorCode, SecureFsErrorDetails } from "./errors.js";
export type { EntryType, ExactStat, SecureData, SecureDirEntry, SecureStat, VerifyEvidence } from "./types.js";
// The SQLite extension that opens a database through a held directory (native/sqlite).
export { pinnedVfsExtensionPath } from "../native/index.js";
