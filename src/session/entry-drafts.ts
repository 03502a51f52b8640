/** Drafts, for {@link SessionTree.append}, of the entries only one peer writes, in that peer's shape. */
import type { ConfiguredModelChain } from "./context.js";
import type { EntryDraft } from "./tree.js";

/** The `customType` of GJC's context-clear marker. */
export const CONTEXT_CLEAR_CUSTOM_TYPE = "context_clear";

type ConfiguredModelChainDraft = Extract<EntryDraft, { type: "configured_model_chain" }>;

/** The `configured_model_chain` draft of `chain`'s own fields only: a caller's runtime state on it (GJC's active index) must not persist. */
export function configuredModelChainDraft(chain: ConfiguredModelChain & { cleared?: boolean }): ConfiguredModelChainDraft {
  const draft: ConfiguredModelChainDraft = { type: "configured_model_chain", role: chain.role, entries: [...chain.entries], origin: chain.origin };
  if (chain.identity !== undefined) draft.identity = chain.identity;
  if (chain.explicitHead !== undefined) draft.explicitHead = chain.explicitHead;
  if (chain.cleared !== undefined) draft.cleared = chain.cleared;
  return draft;
}

/** The `custom` draft of GJC's context clear; appended `{ root: true }`, it starts an empty context, the history kept. */
export function contextClearDraft(data?: Record<string, unknown>): Extract<EntryDraft, { type: "custom" }> {
  return data === undefined ? { type: "custom", customType: CONTEXT_CLEAR_CUSTOM_TYPE } : { type: "custom", customType: CONTEXT_CLEAR_CUSTOM_TYPE, data };
}

/** The `session_info` draft pi writes for a name: the name trimmed (an empty one clears it). */
export function sessionInfoDraft(name: string): Extract<EntryDraft, { type: "session_info" }> {
  return { type: "session_info", name: name.trim() };
}

/** The `model_change` draft pi writes: `provider` and `modelId`, no `model`, no role. */
export function piModelChangeDraft(provider: string, modelId: string): Extract<EntryDraft, { type: "model_change" }> {
  return { type: "model_change", provider, modelId };
}

/** The `model_change` draft GJC writes to drop a role (`clearModelRole`); replay deletes the role. */
export function clearModelRoleDraft(role: string): Extract<EntryDraft, { type: "model_change" }> {
  return { type: "model_change", model: "", role, cleared: true };
}
