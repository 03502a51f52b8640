/** The manager's typed `append*` methods with GJC 0.15's names and parameter orders: each builds a draft for {@link EntryAppender.appendDraft} and returns the new entry's id (the new leaf). */
import {
  clearModelRoleDraft,
  configuredModelChainDraft,
  contextClearDraft,
  type AgentMessage,
  type AppendedEntry,
  type AppendOptions,
  type ConfiguredModelChain,
  type CustomMessageEntry,
  type EntryDraft,
} from "../session/index.js";
import { SessionManagerError } from "./errors.js";

/** Optional fields GJC copies into a `model_change` entry. */
export interface ModelChangeMetadata {
  previousModel?: string;
  reason?: string;
  /** `null` (GJC's "none recorded") is left out: the entry schema knows only a string here. */
  thinkingLevel?: string | null;
}

/** Fields of a `session_init` entry. */
export interface SessionInitFields {
  systemPrompt: string;
  task: string;
  tools: string[];
  outputSchema?: unknown;
  forkContext?: unknown;
}

/** Who a `custom_message` speaks for. */
export type MessageAttribution = "user" | "agent";

/** Copies the fields of `source` whose value is not `undefined` (so no line carries empty keys). */
export function defined<T extends object>(source: T): Partial<T> {
  const out: Partial<T> = {};
  for (const key of Object.keys(source) as (keyof T)[]) {
    if (source[key] !== undefined) out[key] = source[key];
  }
  return out;
}

/** Base of the session manager holding its `append*` methods. */
export abstract class EntryAppender {
  /** Appends `draft` under the leaf (or as a root) as the new leaf, persisted or deferred to the first assistant message. @throws SessionManagerError `persistence_failed`, `read_only`, `closed` */
  protected abstract appendDraft<D extends EntryDraft>(draft: D, options?: AppendOptions): AppendedEntry<D>;

  /** Appends a `message` entry holding `message` as-is. @returns the new entry's id */
  appendMessage(message: AgentMessage): string {
    return this.appendDraft({ type: "message", message }).id;
  }

  /** Appends a `thinking_level_change` (an omitted level is `null`, read as `"off"`). @returns the new entry's id */
  appendThinkingLevelChange(thinkingLevel?: string, operatorIntent = false): string {
    return this.appendDraft({ type: "thinking_level_change", thinkingLevel: thinkingLevel ?? null, ...(operatorIntent ? { operatorIntent: true } : {}) }).id;
  }

  /** Appends a `service_tier_change` (`null` clears the tier). @returns the new entry's id */
  appendServiceTierChange(serviceTier: string | null): string {
    return this.appendDraft({ type: "service_tier_change", serviceTier }).id;
  }

  /** Appends a `mode_change` (for example `"plan"`) with optional data. @returns the new entry's id */
  appendModeChange(mode: string, data?: Record<string, unknown>): string {
    return this.appendDraft({ type: "mode_change", mode, ...defined({ data }) }).id;
  }

  /** Appends a `model_change` of `"provider/modelId"` (no `role` reads as `"default"`). @returns the new entry's id */
  appendModelChange(model: string, role?: string, metadata: ModelChangeMetadata = {}): string {
    const { thinkingLevel, ...rest } = metadata;
    return this.appendDraft({
      type: "model_change",
      model,
      ...defined({ role }),
      ...defined(rest),
      ...(typeof thinkingLevel === "string" ? { thinkingLevel } : {}),
    }).id;
  }

  /** Appends a `model_change` that removes `role` from the context's models. @returns the new entry's id */
  clearModelRole(role: string): string {
    return this.appendDraft(clearModelRoleDraft(role)).id;
  }

  /** Appends a `configured_model_chain`: `chain.role`'s fallback chain from here on (`cleared`: its removal), only its own fields. @returns the new entry's id */
  appendConfiguredModelChain(chain: ConfiguredModelChain & { cleared?: boolean }): string {
    return this.appendDraft(configuredModelChainDraft(chain)).id;
  }

  /** Appends a `session_init` describing how a sub-agent session was started. @returns the new entry's id */
  appendSessionInit(init: SessionInitFields): string {
    return this.appendDraft({ type: "session_init", ...(defined(init) as SessionInitFields) }).id;
  }

  /** Appends a `compaction` keeping the path from `firstKeptEntryId` (GJC's order: `shortSummary` second). @returns the new entry's id */
  appendCompaction<T = unknown>(
    summary: string,
    shortSummary: string | undefined,
    firstKeptEntryId: string,
    tokensBefore: number,
    details?: T,
    fromExtension?: boolean,
    preserveData?: Record<string, unknown>,
  ): string {
    return this.appendDraft({
      type: "compaction",
      summary,
      ...defined({ shortSummary }),
      firstKeptEntryId,
      tokensBefore,
      ...defined({ details, fromExtension, preserveData }),
    }).id;
  }

  /** Appends a `branch_summary` at the leaf without moving it (`fromId` `"root"`: before the first entry). @returns the new entry's id */
  appendBranchSummary(fromId: string, summary: string, details?: unknown, fromExtension?: boolean): string {
    return this.appendDraft({ type: "branch_summary", fromId, summary, ...defined({ details, fromExtension }) }).id;
  }

  /** Appends a `custom` entry (extension state; never part of the model context). @returns the new entry's id */
  appendCustomEntry(customType: string, data?: unknown): string {
    return this.appendDraft({ type: "custom", customType, ...defined({ data }) }).id;
  }

  /** Appends a root `context_clear` custom entry: the model context starts empty, the history stays. @returns the new entry's id */
  appendContextClearEntry(data?: Record<string, unknown>): string {
    return this.appendDraft(contextClearDraft(data), { root: true }).id;
  }

  /** Appends a `custom_message` (extension text that reaches the model), an `observationId` in `details`. @returns the new entry's id @throws SessionManagerError `invalid_options` for an observationId with non-object details */
  appendCustomMessageEntry<T = unknown>(
    customType: string,
    content: CustomMessageEntry["content"],
    display: boolean,
    details?: T,
    attribution: MessageAttribution = "agent",
    observationId?: string,
  ): string {
    // Only an object (or nothing) can carry an observationId.
    if (observationId !== undefined && details !== undefined && (typeof details !== "object" || details === null || Array.isArray(details))) {
      throw new SessionManagerError("invalid_options", "an observationId needs object details (or none)");
    }
    const merged = observationId === undefined ? details : { ...(details as object | undefined), observationId };
    return this.appendDraft({ type: "custom_message", customType, content, display, ...defined({ details: merged }), attribution }).id;
  }

  /** Appends an `mcp_tool_selection`: exactly these MCP tools (see `applyToolSelection` for both domains). @returns the new entry's id */
  appendMCPToolSelection(selectedToolNames: string[], mutationCorrelationId?: string): string {
    return this.appendDraft({ type: "mcp_tool_selection", selectedToolNames, ...defined({ mutationCorrelationId }) }).id;
  }

  /** Appends a `discovered_builtin_tool_selection`: the discovered built-in domain's authority. @returns the new entry's id */
  appendDiscoveredBuiltinToolSelection(selectedToolNames: string[], mutationCorrelationId?: string): string {
    return this.appendDraft({ type: "discovered_builtin_tool_selection", selectedToolNames, ...defined({ mutationCorrelationId }) }).id;
  }

  /** Appends a `ttsr_injection` listing the injected rule names. @returns the new entry's id */
  appendTtsrInjection(ruleNames: string[], records?: unknown[], ttsrMessageCount?: number): string {
    return this.appendDraft({ type: "ttsr_injection", injectedRules: ruleNames, ...defined({ injectedRuleRecords: records, ttsrMessageCount }) }).id;
  }
}
