/** Legacy discovery and copy-retain migration: listing a workspace's v2 and legacy sessions, copying one into v2 under a lock, retiring. */
export { MIGRATION_ERROR_CODES, MigrationError } from "./errors.js";
export type { MigrationErrorCode } from "./errors.js";
export { listSessionCandidates, listSessionCandidatesSync } from "./candidates.js";
export type { CandidateListing, ListCandidatesOptions, SessionCandidate } from "./candidates.js";
export { DIRECTORY_MIGRATION_POLICIES, openCandidateForWrite, openCandidateForWriteSync, retireCandidate } from "./migrate.js";
export type { DirectoryMigrationPolicy, MigrationProgress, OpenForWriteOptions, OpenForWriteResult, RetireResult } from "./migrate.js";
export { LOCKS_DIRECTORY, RECEIPTS_DIRECTORY, TOMBSTONES_DIRECTORY, operationId, readRecordFile, sourceLockName } from "./receipts.js";
export { isLegacyFolderName, listLegacySessionFiles } from "./workspaces.js";
export type { LegacySessionFile } from "./workspaces.js";
