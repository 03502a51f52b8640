/**
 * `gjc-session-store/gjc`: a drop-in for GJC 0.15's four session modules (`session-manager`,
 * `session-storage`, `history-storage`, `blob-store`) and its `session-manager-internal` read
 * hook. Each of those files becomes `export * from "gjc-session-store/gjc"` (README, "GJC's own
 * agent"). One engine: the manager here is a layer over the main entry's, so there is no second
 * persistence path or loader. Each name's TSDoc sits at its declaration.
 */

// the session manager
export { SessionManager } from "./session-manager.js";
export { SessionManagerTestHooks } from "./test-hooks.js";
export type { SessionManagerTestHookPoints } from "./test-hooks.js";
export type {
  StrictSessionOpenResult, StrictSessionOpenFailure, StrictSessionForkResult, SessionManagerCloseOutcome,
} from "./session-manager.js";
export type {
  PreparedNewSession, SessionManagerStateSnapshot, DefaultModelSelectionStage, DefaultModelSelectionPromotion,
} from "./face-transitions.js";
export type { StrictInventoryResult, StrictInventoryCandidate, StrictInventoryFailure, StrictInventoryFailureKind, StrictInventoryStorage } from "./strict-inventory.js";
export type { ResumeSessionIdentity, ResumeTailInspection, ResumeTailError, ResumeTailErrorReason } from "./strict-open.js";
export type { CapturedSessionTranscriptSnapshot, TranscriptSnapshotHandle } from "./transcript-capture.js";
export type { SessionMemoryStats, EvictCompactedContentResult } from "./memory-stats.js";
export type { RevisionSnapshot, RevisionSnapshot as SessionManagerRevisionSnapshot } from "./face-core.js";
export { toSessionManagerCheckpointRevisionStrings, RevisionCounterError } from "./revisions.js";
export type { SessionManagerCheckpointRevisionStrings } from "./revisions.js";
export type { ArtifactManagerLike } from "./face-artifacts.js";

// message identity (GJC's app looks messages up in these; the manager fills them)
export {
  associateSessionMessageEntryId, associateSessionMessageObservationId, associateSessionMessageViewportAnchorId,
  getSessionMessageEntryId, getSessionMessageObservationId, getSessionMessageViewportAnchorId, getUserMessageViewportAnchorIds,
  transferSessionMessageIdentity,
} from "./messages.js";
export type { IdentifiedMessage } from "./messages.js";

// module functions over entries and files
export { buildSessionContext, LEGACY_SESSION_IDENTITY_NAMESPACE } from "./context.js";
export { getRecentSessions, DEFAULT_RECENT_SESSION_LIMIT } from "./recent.js";
export type { RecentSessionInfo } from "./recent.js";
export { createReadonlySessionManager, sessionArtifactCapability } from "./readonly.js";
export type { ReadonlySessionManager, SessionArtifactCapability } from "./readonly.js";
export {
  CURRENT_SESSION_VERSION, getLatestCompactionEntry, migrateSessionEntries, parseSessionEntries, BLOB_REF_PREFIX, parseBlobRef,
} from "../session/index.js";
export { findMostRecentSession, loadEntriesFromFile, resolveResumableSession } from "../manager/index.js";

// the private read hook, as a documented capability
export { sessionReadAccess, getEntriesForInternalRead, getSessionContextForInternalRead, getTreeForInternalRead } from "./read-hook.js";
export type { SessionManagerReadAccess } from "./read-hook.js";

// errors and limits
export {
  SessionAppendPersistenceError, SessionNearLimitAppendError, SessionContextTooLargeError, SessionArtifactCapacityError,
  SessionTranscriptOversizedError, SessionMigrationBusyError, SessionManagedStorageError, SessionMigrationPolicyError,
  MessageIdentityError, SESSION_OVERSIZED_RECOVERY_MESSAGE,
  SESSION_CONTEXT_MATERIALIZATION_BUDGET_BYTES, SESSION_CONTEXT_MATERIALIZATION_BUDGET_BYTES_DEFAULT,
  SESSION_CONTEXT_MATERIALIZATION_BUDGET_BYTES_MAX, resolveSessionContextBudgetBytes,
} from "./errors.js";
export type { SessionAppendPersistenceFailurePhase, NearLimitAppendDetails } from "./errors.js";
export { GjcError } from "../errors.js";
export { ManagedScopeUnavailableError } from "./scope-diagnostics.js";
export type { ScopeFailureClassification } from "./scope-diagnostics.js";
export { RESUME_TRANSCRIPT_MAX_BYTES, BOUNDED_RESUME_TRANSCRIPT_MAX_BYTES } from "./strict-open.js";

// session-storage
export { syncSessionMoveDirectory, recoverOrphanedBackups } from "./session-dir-recovery.js";
export type { SessionMoveDirectoryHandle, OrphanedBackupRecovery } from "./session-dir-recovery.js";
export { FileSessionStorage, probeSessionRetirement, retireSessionTranscript } from "./storage.js";
export type { SessionStorageStat, SessionStorageSnapshot, SessionRetirementOutcome } from "./storage.js";
export { SessionDeleteVerificationError, DELETE_QUARANTINE_PREFIX } from "./verified-delete.js";
export type {
  SessionStorageFileIdentity, VerifiedSessionDeleteTarget, VerifiedSessionDeleteResult, VerifiedDeleteFailureKind,
} from "./verified-delete.js";
export { MemorySessionStorage } from "./memory-storage.js";
export { SessionStorageWriterRetryableCloseError, createManagedSessionSecurityContext } from "./writer-options.js";
export type { SessionStorageWriterCloseAdapter, ManagedSessionSecurityContext, SessionStorageWriterOpenOptions } from "./writer-options.js";
export type { WriterCloseState as SessionStorageWriterCloseState, SessionStorageWriter } from "../storage/index.js";
export { StorageError } from "../storage/index.js";
export type { SessionStorage } from "../storage/index.js";
export type { FaceSessionStorage, GjcShapedStorage } from "./storage-view.js";

// blob-store
export { isBlobRef } from "../storage/index.js";
export { BlobStore, EphemeralBlobStore, MemoryBlobStore } from "./blob-stores.js";
export type { CheckedBlobPutResult, MemoryBlobStoreOptions } from "./blob-stores.js";
export type { BlobPutResult } from "../storage/index.js";
export { BLOB_REFERENCE_MAX_LENGTH, collectBlobReferences, listCanonicalBlobs, removeCanonicalBlob } from "./blobs.js";
export type { CanonicalBlobEntry, CanonicalBlobRemoval, RemoveCanonicalBlobOptions } from "./blobs.js";

// history-storage
export { HistoryStorage, HistoryError } from "../history/index.js";
export type { HistoryEntry, HistoryStorageOptions } from "../history/index.js";

// the types GJC's app imports
export type { SessionInfo } from "./picker-listing.js";
export type {
  SessionDestination, SessionDestinationInput, SessionMemoryMode, NewSessionOptions,
  MigrationPolicy as SessionDirectoryMigrationPolicy,
} from "../manager/index.js";
export type {
  AgentMessage, SessionEntry, SessionContext, SessionTreeNode, UsageStatistics, FileEntry, SessionHeader, CompactionEntry,
  BranchSummaryEntry, CustomMessageEntry, ModeChangeEntry, MessageEntry as SessionMessageEntry,
} from "../session/index.js";
