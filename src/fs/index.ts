/** The secure filesystem layer: owner-only directories and files held by descriptor. */
export { SecureDir } from "./secure-dir.js";
export type { EntryPath, LockOptions, OpenDirOptions, OpenFileOptions } from "./secure-dir.js";
export { SecureFile } from "./secure-file.js";
export type { ReadOptions } from "./secure-file.js";
export { SecureLock } from "./secure-lock.js";
export { insecureAncestors } from "./ancestors.js";
export { directoryIdentity, isValidEntryName } from "./identity.js";
export type { DirectoryIdentity } from "./identity.js";
export { SECURE_FS_ERROR_CODES, SecureFsError, unlessMissing } from "./errors.js";
export { NativeUnavailableError } from "../native/index.js";
export type { SecureFsErrorCode, SecureFsErrorDetails } from "./errors.js";
export type { EntryType, ExactStat, SecureDirEntry, SecureStat } from "../native/index.js";
// The SQLite extension that opens a database through a held directory (native/sqlite).
export { pinnedVfsExtensionPath } from "../native/index.js";
