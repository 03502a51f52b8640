/** Managed scopes: workspace identity v1, the `v2-<digest>` directory and its binding, legacy directory names. */
export { SCOPE_ERROR_CODES, ScopeError } from "./errors.js";
export type { ScopeErrorCode, ScopeFailure } from "./errors.js";
export {
  SCOPE_DIRECTORY_PREFIX,
  classifyWindowsPath,
  isScopeDirectoryName,
  scopeDigest,
  scopeDirectoryName,
  workspaceIdentity,
  formerWorkspaceIdentity,
} from "./identity.js";
export type { WorkspaceIdentity, WorkspaceIdentityResult } from "./identity.js";
export { BINDING_FILE_NAME, checkBindingBytes, decodeBinding, encodeBinding, ensureBinding, readBinding } from "./binding.js";
export type { BindingCheck, BindingRead, ScopeBinding } from "./binding.js";
export { SESSIONS_DIRECTORY, canonicalizeTrustedPath, defaultAgentDir, resolveManagedScope, resolveManagedScopeOrThrow } from "./resolve.js";
export type { ManagedScope, ResolveScopeOptions, ScopeResolution } from "./resolve.js";
export { INTERNAL_DIRECTORY, discoveredLegacyDirectories, legacyDirectoryNames } from "./legacy-names.js";
export type { LegacyAnchors } from "./legacy-names.js";
export { AgentRoot } from "./agent-root.js";
export type { AgentRootOptions } from "./agent-root.js";
export { managedSessionTarget } from "./session-defaults.js";
export { inspectScopeDirectories } from "./inspect.js";
export type { ScopeDirectoryReport, ScopeDirectoryState } from "./inspect.js";
