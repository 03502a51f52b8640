/**
 * The typed `append*` surface of the session manager, one method per entry type. Each builds
 * the entry's draft (leaving out optional fields that are absent, so no line carries empty
 * keys) and hands it to {@link EntryAppender.appendDraft}, which the manager implements.
 */
import type {
  AgentMessage,
  AppendedEntry,
  BranchSummaryEntry,
  CompactionEntry,
  CustomEntry,
  CustomMessageEntry,
  DiscoveredBuiltinToolSelectionEntry,
  EntryDraft,
  McpToolSelectionEntry,
  MessageEntry,
  ModeChangeEntry,
  ModelChangeEntry,
  ServiceTierChangeEntry,
  SessionInitEntry,
  ThinkingLevelChangeEntry,
  TtsrInjectionEntry,
} from "../session/index.js";

/** Optional fields of a `compaction` entry. */
export interface CompactionOptions {
  shortSummary?: string;
  details?: unknown;
  preserveData?: Record<string, unknown>;
  fromExtension?: boolean;
}

/** Optional fields of a `model_change` entry. */
export interface ModelChangeOptions {
  cleared?: boolean;
  previousModel?: string;
  reason?: string;
  thinkingLevel?: string;
}

/** Fields of a `session_init` entry. */
export interface SessionInitFields {
  systemPrompt: string;
  task: string;
  tools: string[];
  outputSchema?: unknown;
  forkContext?: unknown;
}

/** Copies the fields of `source` whose value is not `undefined`. */
function defined<T extends object>(source: T): Partial<T> {
  const out: Partial<T> = {};
  for (const key of Object.keys(source) as (keyof T)[]) {
    if (source[key] !== undefined) out[key] = source[key];
  }
  return out;
}

/** Base of the session manager holding its `append*` methods. */
export abstract class EntryAppender {
  /**
   * Appends one entry built from `draft` as a child of the current leaf, makes it the leaf,
   * and persists it (or defers it until the first assistant message).
   * @throws SessionManagerError `persistence_failed`, `read_only`, `closed`
   */
  protected abstract appendDraft<D extends EntryDraft>(draft: D): AppendedEntry<D>;

  /** Appends a `message` entry holding `message` as-is. */
  appendMessage(message: AgentMessage): MessageEntry {
    return this.appendDraft({ type: "message", message });
  }

  /** Appends a `model_change` (`model` is `"provider/id"`; `role` absent means default). */
  appendModelChange(model: string, role?: string, options: ModelChangeOptions = {}): ModelChangeEntry {
    return this.appendDraft({ type: "model_change", model, ...defined({ role }), ...defined(options) });
  }

  /** Appends a `thinking_level_change` (`null` reads as `"off"`). */
  appendThinkingLevelChange(thinkingLevel: string | null): ThinkingLevelChangeEntry {
    return this.appendDraft({ type: "thinking_level_change", thinkingLevel });
  }

  /** Appends a `service_tier_change` (`null` clears the tier). */
  appendServiceTierChange(serviceTier: string | null): ServiceTierChangeEntry {
    return this.appendDraft({ type: "service_tier_change", serviceTier });
  }

  /** Appends a `compaction` that keeps the path from `firstKeptEntryId` on. */
  appendCompaction(
    summary: string,
    firstKeptEntryId: string,
    tokensBefore: number,
    options: CompactionOptions = {},
  ): CompactionEntry {
    return this.appendDraft({ type: "compaction", summary, firstKeptEntryId, tokensBefore, ...defined(options) });
  }

  /**
   * Appends a `branch_summary` at the current leaf without moving it first (use
   * `branchWithSummary` to move and summarise in one step). `fromId` is `"root"` for a
   * branch that started before the first entry.
   */
  appendBranchSummary(
    fromId: string,
    summary: string,
    options: { details?: unknown; fromExtension?: boolean } = {},
  ): BranchSummaryEntry {
    return this.appendDraft({ type: "branch_summary", fromId, summary, ...defined(options) });
  }

  /** Appends a `custom` entry (extension state; never part of the model context). */
  appendCustomEntry(customType: string, data?: unknown): CustomEntry {
    return this.appendDraft({ type: "custom", customType, ...defined({ data }) });
  }

  /** Appends a `custom_message` (extension text that reaches the model context). */
  appendCustomMessageEntry(
    customType: string,
    content: CustomMessageEntry["content"],
    display: boolean,
    details?: unknown,
    attribution?: "user" | "agent",
  ): CustomMessageEntry {
    return this.appendDraft({ type: "custom_message", customType, content, display, ...defined({ details, attribution }) });
  }

  /** Appends a `ttsr_injection` listing the injected rule names. */
  appendTtsrInjection(
    injectedRules: string[],
    options: { injectedRuleRecords?: unknown; ttsrMessageCount?: number } = {},
  ): TtsrInjectionEntry {
    return this.appendDraft({ type: "ttsr_injection", injectedRules, ...defined(options) });
  }

  /** Appends a `session_init` describing how a sub-agent session was started. */
  appendSessionInit(fields: SessionInitFields): SessionInitEntry {
    return this.appendDraft({ type: "session_init", ...(defined(fields) as SessionInitFields) });
  }

  /** Appends a `mode_change` (for example `"plan"`) with optional data. */
  appendModeChange(mode: string, data?: Record<string, unknown>): ModeChangeEntry {
    return this.appendDraft({ type: "mode_change", mode, ...defined({ data }) });
  }

  /**
   * Appends an `mcp_tool_selection`: the MCP domain becomes authoritative with exactly these
   * names. For a mutation that also sets discovered built-ins use `applyToolSelection`, which
   * correlates the two entries.
   */
  appendMcpToolSelection(selectedToolNames: string[], options: { mutationCorrelationId?: string } = {}): McpToolSelectionEntry {
    return this.appendDraft({ type: "mcp_tool_selection", selectedToolNames, ...defined(options) });
  }

  /** Appends a `discovered_builtin_tool_selection`: the discovered built-in domain's authority. */
  appendDiscoveredBuiltinToolSelection(
    selectedToolNames: string[],
    options: { mutationCorrelationId?: string } = {},
  ): DiscoveredBuiltinToolSelectionEntry {
    return this.appendDraft({ type: "discovered_builtin_tool_selection", selectedToolNames, ...defined(options) });
  }
}
