/**
 * The session manager layer: session discovery (listing, most recent, across scopes) and
 * terminal breadcrumbs.
 */
export * from "./discovery.js";
export { listAllManaged, listManagedScope } from "./managed-listing.js";
export type { ManagedListingOptions } from "./managed-listing.js";
export { NO_MESSAGES, SESSION_LIST_PREFIX_BYTES } from "./session-info.js";
export type { DiscoverySkipCode, SessionInfo, SkippedSession } from "./session-info.js";
export { DEFAULT_SESSION_INFO_CACHE_ENTRIES, SessionInfoCache } from "./session-info-cache.js";
export type { CachedOutcome, ListedFileIdentity, ListingRecord, ResumePoint } from "./session-info-cache.js";
export { LISTING_INDEX_FILE_NAME, MAX_LISTING_INDEX_BYTES } from "./sidecar-files.js";
export { MAX_PATCH_LINE_BYTES, TAIL_CHUNK_BYTES } from "./patch-tail-scan.js";
export * from "./breadcrumbs.js";
export { SessionManager } from "./session-manager.js";
export { loadEntriesFromFile } from "./session-files.js";
export { resolveResumableSession } from "./listing.js";
export type { ListOptions, ResolvedSessionMatch } from "./listing.js";
export type { SessionDestination, SessionDestinationInput, MigrationPolicy, SessionMemoryMode } from "./destination.js";
export type { MessageAttribution, ModelChangeMetadata, SessionInitFields } from "./appender.js";
export { SessionManagerError, isSessionManagerError } from "./errors.js";
export type { SessionManagerErrorCode } from "./errors.js";
export type { SessionManagerOptions, OpenSessionOptions, NewSessionOptions, SessionCloseReport } from "./options.js";
export type { SessionLoadReport, MovedAsideFile } from "./open-file.js";
export { selectionFromToolNames } from "./selection.js";
export type { ToolDomain, ToolClassifier, ToolSelectionChange, ToolSelectionState } from "./selection.js";
export { sanitizeSessionTitle, MAX_SESSION_TITLE_CHARS } from "./title.js";
export type { TitleSource } from "./title.js";
