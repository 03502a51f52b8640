/**
 * gjc-session-store's public API (the `gjc-session` CLI imports only from here). Each name's
 * TSDoc sits at its declaration; everything not listed is internal to its layer.
 */

// errors shared by every layer
export { GjcError } from "./errors.js";

// the session manager (GJC 0.15's API)
export {
  SessionManager, loadEntriesFromFile, resolveResumableSession, SessionManagerError, isSessionManagerError,
} from "./manager/index.js";
export type {
  SessionManagerErrorCode, SessionManagerOptions, SessionCloseReport, OpenSessionOptions, NewSessionOptions,
  ListOptions, ResolvedSessionMatch, SessionDestination, SessionDestinationInput, MigrationPolicy,
  SessionMemoryMode, MessageAttribution, ModelChangeMetadata, SessionInitFields, SessionLoadReport,
  MovedAsideFile, ToolClassifier, ToolDomain, ToolSelectionChange, ToolSelectionState, TitleSource,
} from "./manager/index.js";

// listing sessions
export {
  getRecentSessions, findMostRecentSession, listSessions, listRecentSessions, listAll, SessionInfoCache,
  NO_MESSAGES, writeBreadcrumb, readBreadcrumb, resolveBreadcrumb, terminalIdFromEnv, stdinTtyPath,
} from "./manager/index.js";
export type {
  DiscoveryOptions, SessionListing, SessionInfo, SkippedSession, DiscoverySkipCode, BreadcrumbReadResult,
  BreadcrumbResolution, BreadcrumbWriteResult, ResolveBreadcrumbOptions, TerminalIdResult,
} from "./manager/index.js";

// the session format: entries, messages, context
export {
  CURRENT_SESSION_VERSION, SESSION_ENTRY_TYPES, SessionEntrySchema, SessionHeaderSchema, isUnknownEntry,
  isValidSessionId, buildSessionContext, loadSession, validateSession, SessionLoader, PersistSanitizeError,
  SessionFormatError, SessionTreeError, BLOB_REF_PREFIX, parseBlobRef, parseSessionEntries,
  migrateSessionEntries, getLatestCompactionEntry, computeUsageStatistics, MAX_ENTRY_DEPTH, MAX_ENTRY_BYTES,
} from "./session/index.js";
export type {
  AgentMessage, AgentMessageRole, StoredAgentMessage, UserMessage, AssistantMessage, ToolResultMessage,
  BashExecutionMessage, PythonExecutionMessage, FileMentionMessage, MessageUsage, UsageStatistics,
  SessionFileEntry, ConfiguredModelChainEntry, SessionInfoEntry, ConfiguredModelChain, ContentBlock,
  SessionHeader, SessionEntry, SessionEntryType, FileEntry, UnknownEntry, UnknownEntryReason, MessageEntry,
  ModelChangeEntry, ThinkingLevelChangeEntry, ServiceTierChangeEntry, CompactionEntry, BranchSummaryEntry,
  CustomEntry, CustomMessageEntry, LabelEntry, TtsrInjectionEntry, McpToolSelectionEntry,
  DiscoveredBuiltinToolSelectionEntry, SessionInitEntry, ModeChangeEntry, HeaderPatchRecord, EntryPatchRecord,
  PatchRecord, SessionContext, ContextMessage, BranchSummaryAgentMessage, CompactionSummaryAgentMessage,
  CustomAgentMessage, SessionTreeNode, SessionTreeErrorCode, SessionFormatErrorCode, LoadedSession,
  SessionLoadResult, ValidationReport, InvalidHeaderReason, UnresolvedBlobRef, PatchSkipCode, Violation,
} from "./session/index.js";

// storage: the contract and its three implementations, blobs
export {
  FileSessionStorage, ManagedSessionStorage, MemorySessionStorage, NdjsonFileWriter, StorageError,
  isStorageError, STORAGE_ERROR_CODES, BlobStore, isBlobRef,
} from "./storage/index.js";
export type {
  SessionStorage, SessionStorageWriter, SidecarFile, SidecarOpenOptions, SessionFileReader, LineSink, StorageStat, StorageLogger,
  ReplaceOptions, WriteChunk, StorageErrorCode, FileSessionStorageOptions, ManagedSessionStorageOptions,
  MemorySessionStorageOptions, BlobPutResult,
} from "./storage/index.js";

// managed scopes and legacy migration
export {
  resolveManagedScope, resolveManagedScopeOrThrow, defaultAgentDir, canonicalizeTrustedPath,
  isScopeDirectoryName, legacyDirectoryNames, inspectScopeDirectories, discoveredLegacyDirectories,
  workspaceIdentity, formerWorkspaceIdentity, scopeDigest, scopeDirectoryName, classifyWindowsPath, encodeBinding, checkBindingBytes,
  decodeBinding, readBinding, ensureBinding, SESSIONS_DIRECTORY, ScopeError, SCOPE_ERROR_CODES, AgentRoot,
} from "./scope/index.js";
export type {
  ManagedScope, ResolveScopeOptions, ScopeResolution, ScopeErrorCode, ScopeFailure, ScopeDirectoryReport,
  ScopeDirectoryState, WorkspaceIdentity, WorkspaceIdentityResult, ScopeBinding, BindingCheck, BindingRead,
  AgentRootOptions,
} from "./scope/index.js";
export {
  listSessionCandidates, openCandidateForWrite, retireCandidate, MigrationError, MIGRATION_ERROR_CODES,
  DIRECTORY_MIGRATION_POLICIES, listLegacySessionFiles,
} from "./migration/index.js";
export type {
  CandidateListing, SessionCandidate, ListCandidatesOptions, MigrationProgress, OpenForWriteOptions,
  OpenForWriteResult, RetireResult, DirectoryMigrationPolicy, MigrationErrorCode, LegacySessionFile,
} from "./migration/index.js";

// prompt history
export { HistoryStorage, HistoryError, HISTORY_DB_NAME, HISTORY_ERROR_CODES, defaultHistoryDbPath } from "./history/index.js";
export type { HistoryEntry, HistoryStorageOptions, HistoryErrorCode } from "./history/index.js";

// the secure filesystem layer (owner-only directories and files by descriptor)
export {
  SecureDir, SecureFile, SecureLock, SecureFsError, NativeUnavailableError, SECURE_FS_ERROR_CODES,
  isValidEntryName, directoryIdentity,
} from "./fs/index.js";
export type {
  SecureFsErrorCode, SecureFsErrorDetails, OpenDirOptions, OpenFileOptions, LockOptions, ReadOptions,
  EntryType, SecureStat, SecureDirEntry, DirectoryIdentity,
} from "./fs/index.js";

// audit of an agent directory
export {
  auditAgentDir, AuditError, AUDIT_FINDING_CODES, AUDIT_FIXABLE_CODES, AuditReportSchema, AuditObjectSchema,
  AuditFindingSchema, AuditRepairSchema,
} from "./audit/index.js";
export type {
  AuditOptions, AuditErrorCode, AuditFinding, AuditFindingCode, AuditObject, AuditObjectType, AuditRepair,
  AuditReport, AuditSeverity,
} from "./audit/index.js";
