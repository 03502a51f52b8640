/**
 * Managed scopes: workspace identity v1, the `v2-<digest>` scope directory, its binding
 * file, and the legacy directory names of a workspace.
 */
export { SCOPE_ERROR_CODES, ScopeError, scopeFailure } from "./errors.js";
export type { ScopeErrorCode, ScopeFailure } from "./errors.js";
export {
  SCOPE_DIRECTORY_PREFIX,
  base32Lower,
  classifyWindowsPath,
  isIdentityDigest,
  isScopeDirectoryName,
  scopeDigest,
  scopeDirectoryName,
  workspaceIdentity,
} from "./identity.js";
export type { IdentityPlatform, WindowsPathClass, WorkspaceIdentity, WorkspaceIdentityResult } from "./identity.js";
export { BINDING_FILE_NAME, checkBindingBytes, decodeBinding, encodeBinding, ensureBinding, readBinding } from "./binding.js";
export type { BindingCheck, BindingIdentity, BindingRead, ScopeBinding } from "./binding.js";
export {
  AGENT_DIR_ENV,
  CONFIG_DIR_ENV,
  SESSIONS_DIRECTORY,
  canonicalizeTrustedPath,
  defaultAgentDir,
  resolveManagedScope,
  resolveManagedScopeOrThrow,
} from "./resolve.js";
export type { ManagedScope, ResolveScopeOptions, ScopeResolution } from "./resolve.js";
export { INTERNAL_DIRECTORY, MAX_DISCOVERED_LEGACY_DIRECTORIES, discoveredLegacyDirectories, legacyDirectoryNames } from "./legacy-names.js";
export type { LegacyAnchors } from "./legacy-names.js";
export { AgentRoot, REPAIRABLE_CODES } from "./agent-root.js";
export type { AgentRootOptions, DirNames } from "./agent-root.js";
export { managedSessionStorageForRead, managedSessionTarget } from "./session-defaults.js";
export type { ManagedSessionTarget } from "./session-defaults.js";
export { inspectScopeDirectories } from "./inspect.js";
export type { ScopeDirectoryReport, ScopeDirectoryState } from "./inspect.js";
