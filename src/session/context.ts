/**
 * Context reconstruction: what the model sees, and with which runtime settings, when the
 * conversation continues from a given leaf. Everything is derived from the single path from
 * the root to that leaf, so entries on abandoned branches never leak in.
 */

import type { CompactionSummaryAgentMessage, StoredAgentMessage } from "./messages.js";
import {
  type CompactionEntry,
  type ConfiguredModelChainEntry,
  entryIdOf,
  type FileEntry,
  isUnknownEntry,
  modelChangeModel,
  type SessionEntry,
} from "./schemas.js";
import { arrayPathView, findLastMessage, indexEntries, pathToRoot, type PathView } from "./tree.js";

/**
 * A message of the reconstructed context: a stored message as-is (whatever its role), or one
 * synthesised from an entry (`custom`, `branchSummary`, `compactionSummary`).
 */
export type ContextMessage = StoredAgentMessage;

/**
 * The fallback chain of models configured for one role, as a `configured_model_chain` entry
 * holds it (without the entry's own fields).
 */
export interface ConfiguredModelChain {
  role: string;
  /** `"provider/id"` per model, head first */
  entries: string[];
  /** who configured it (for example `"settings"`, `"subagent"`, `"legacy_session"`) */
  origin: string;
  identity?: string;
  explicitHead?: boolean;
}

/** What a TTSR rule injection recorded about one rule, as its writer stored it. */
export interface TtsrInjectionRecord {
  name: string;
  /** when the rule was last injected; 0 for a rule known by name only */
  lastInjectedAt?: number;
  [key: string]: unknown;
}

/** The `origin` of a chain synthesised for a role that has a model but no configured chain. */
export const LEGACY_CHAIN_ORIGIN = "legacy_session";

/** The model-facing state of a session at one leaf. */
export interface SessionContext {
  /** Messages in the order they are sent, compaction summary first when there is one. */
  messages: ContextMessage[];
  /** Latest `thinking_level_change` on the path; `"off"` when none (or when it was `null`). */
  thinkingLevel: string;
  /** Latest `service_tier_change`; `undefined` when none or when it cleared the tier. */
  serviceTier: string | undefined;
  /**
   * Model per role (`"provider/id"`). `default` falls back to the provider and model of the
   * assistant messages until an explicit `model_change` for the default role is seen.
   */
  models: Record<string, string>;
  /**
   * The chain per role from the latest `configured_model_chain` for it on the path (`cleared`
   * removes it). A role that an explicit `model_change` gave a model but that has no chain gets
   * a one-model chain with origin {@link LEGACY_CHAIN_ORIGIN} and `explicitHead: true`, so a
   * session written before chains existed resumes with the model it had.
   */
  configuredModelChains: Record<string, ConfiguredModelChain>;
  /** Every rule any `ttsr_injection` on the path injected, first occurrence order, no repeats. */
  injectedTtsrRules: string[];
  /**
   * One record per injected rule, for a repeat resume: the latest `injectedRuleRecords` record
   * naming it, else `{ name, lastInjectedAt: 0 }` for a rule listed by name only.
   */
  injectedTtsrRuleRecords: TtsrInjectionRecord[];
  /** The latest finite `ttsrMessageCount` of a `ttsr_injection` on the path; 0 when none. */
  ttsrMessageCount: number;
  /** `selectedToolNames` of the latest `mcp_tool_selection`; `[]` when there is none. */
  selectedMCPToolNames: string[];
  /** Whether the path holds an `mcp_tool_selection` (an empty selection is still a choice). */
  hasPersistedMCPToolSelection: boolean;
  /**
   * The latest discovered built-in selection: a `discovered_builtin_tool_selection`, or the
   * legacy v4 `selectedDiscoveredBuiltinToolNames` of an `mcp_tool_selection`, whichever is
   * later on the path; `undefined` when there is none.
   */
  selectedDiscoveredBuiltinToolNames: string[] | undefined;
  /** Whether the path holds a discovered built-in selection (either form). */
  hasPersistedDiscoveredBuiltinToolSelection: boolean;
  /** Latest `mode_change`; `"none"` when there is none. */
  mode: string;
  /** The `data` of the latest `mode_change`. */
  modeData: Record<string, unknown> | undefined;
}

/**
 * Rebuilds the context at `leafId`.
 *
 * - `leafId === null` gives the empty context (the session was reset to before its root).
 * - An id found in the index is used as the leaf. Otherwise (`undefined`, or an id that is not
 *   there) the leaf is the last entry in `entries` that has an id; records without one are
 *   skipped, so an id-less tail record cannot empty the context.
 * - Models: a `model_change` sets `models[role ?? "default"]` to its `model`, or to pi's
 *   `provider/modelId` when it has no `model`; `cleared: true` deletes the role. `default`
 *   falls back to the last assistant message's `provider/model` only while no explicit change
 *   of the default role is on the path (the spec's rule; pi's differs, see
 *   `buildPiSessionContext`).
 * - Only the latest compaction on the path counts. Its summary comes first, then the path
 *   entries from its `firstKeptEntryId` up to the compaction, then everything after it. When
 *   `firstKeptEntryId` is absent or names no entry before the compaction on this path (a
 *   dangling id, for example from a v1 index that pointed past the file), nothing before the
 *   compaction is kept: the summary already stands for that history, and replaying all of it
 *   would undo the compaction. When the compaction preserved provider-side replacement
 *   history (`preserveData.openaiRemoteCompaction`), that history travels as the summary's
 *   `providerPayload` and replaces the kept entries.
 * - Records kept verbatim (unknown types, invalid fields) link the path through their ids
 *   but contribute neither state nor messages.
 *
 * Runs in time linear in the length of the path (plus one pass over `entries` to build an
 * index when `byId` is not given; pass {@link SessionTree.index} to skip it).
 *
 * @param byId - id index of `entries`, last holder of an id winning, as {@link SessionTree} keeps it
 */
export function buildSessionContext(entries: readonly FileEntry[], leafId?: string | null, byId?: ReadonlyMap<string, FileEntry>): SessionContext {
  const path = contextPath(entries, leafId, byId);
  return buildContextOnPath(path === undefined ? undefined : arrayPathView(path));
}

/**
 * {@link buildSessionContext} over a root-to-leaf path given as a {@link PathView}
 * (`undefined`: the empty context). Reads only what the context is made of: the entries that
 * are not messages, the messages after the compaction boundary, and the last assistant
 * messages while the default model is still open.
 */
export function buildContextOnPath(path: PathView | undefined): SessionContext {
  if (path === undefined) return emptyContext();

  const context = emptyContext();
  const models = new Map<string, string>();
  const chains = new Map<string, ConfiguredModelChainEntry>();
  const rules = new Set<string>();
  const ruleRecords = new Map<string, TtsrInjectionRecord>();
  let explicitDefaultModel = false;
  let compactionAt = -1;
  // Messages are nearly every entry and carry no state here: skip them on the cheapest test.
  const stateful: number[] = [];
  for (let i = 0; i < path.length; i++) if (path.typeAt(i) !== "message") stateful.push(i);
  const stateEntries = path.entriesAt(stateful);
  for (let k = 0; k < stateful.length; k++) {
    const i = stateful[k]!;
    const entry = stateEntries[k]!;
    if (isUnknownEntry(entry)) continue;
    switch (entry.type) {
      case "thinking_level_change":
        context.thinkingLevel = entry.thinkingLevel ?? "off";
        break;
      case "model_change": {
        const role = entry.role ?? "default";
        const model = modelChangeModel(entry);
        if (entry.cleared === true || model === undefined) models.delete(role);
        else models.set(role, model);
        if (role === "default") explicitDefaultModel = true;
        break;
      }
      case "configured_model_chain":
        if (entry.cleared === true) chains.delete(entry.role);
        else chains.set(entry.role, entry);
        break;
      case "service_tier_change":
        context.serviceTier = entry.serviceTier ?? undefined;
        break;
      case "ttsr_injection":
        for (const rule of entry.injectedRules) {
          rules.add(rule);
          if (!ruleRecords.has(rule)) ruleRecords.set(rule, { name: rule, lastInjectedAt: 0 });
        }
        for (const record of ttsrRecords(entry.injectedRuleRecords)) {
          rules.add(record.name);
          ruleRecords.set(record.name, record);
        }
        if (typeof entry.ttsrMessageCount === "number" && Number.isFinite(entry.ttsrMessageCount)) {
          context.ttsrMessageCount = entry.ttsrMessageCount;
        }
        break;
      case "mcp_tool_selection":
        context.selectedMCPToolNames = entry.selectedToolNames;
        context.hasPersistedMCPToolSelection = true;
        if (entry.selectedDiscoveredBuiltinToolNames !== undefined) {
          context.selectedDiscoveredBuiltinToolNames = entry.selectedDiscoveredBuiltinToolNames;
          context.hasPersistedDiscoveredBuiltinToolSelection = true;
        }
        break;
      case "discovered_builtin_tool_selection":
        context.selectedDiscoveredBuiltinToolNames = entry.selectedToolNames;
        context.hasPersistedDiscoveredBuiltinToolSelection = true;
        break;
      case "mode_change":
        context.mode = entry.mode;
        context.modeData = entry.data;
        break;
      case "compaction":
        compactionAt = i;
        break;
      default:
        break;
    }
  }
  // Only the last assistant before the first explicit default change could still decide the
  // default, so it is looked up once at the end instead of on every message of a long path.
  const inferred = explicitDefaultModel ? undefined : lastAssistantModel(path);
  // fromEntries defines own properties, so a role named "__proto__" stays a plain key.
  context.models = Object.fromEntries(inferred === undefined ? models : [["default", inferred], ...models]);
  context.configuredModelChains = Object.fromEntries(configuredChains(chains, models));
  context.injectedTtsrRules = [...rules];
  context.injectedTtsrRuleRecords = [...ruleRecords.values()];
  if (compactionAt === -1) collectMessages(path, 0, path.length, context.messages);
  else collectCompacted(path, compactionAt, context.messages);
  return context;
}

/**
 * The root-to-leaf path {@link buildSessionContext} works on, by its leaf rules; `undefined`
 * when the context is empty (a `null` leaf, or no entry with an id).
 */
export function contextPath(entries: readonly FileEntry[], leafId: string | null | undefined, byId?: ReadonlyMap<string, FileEntry>): FileEntry[] | undefined {
  if (leafId === null) return undefined;
  const index = byId ?? indexEntries(entries);
  const leaf = (leafId === undefined ? undefined : index.get(leafId)) ?? lastEntryWithId(entries);
  return leaf === undefined ? undefined : pathToRoot(leaf, index);
}

/** The well-formed records of `injectedRuleRecords` (an object with a string `name` each). */
function ttsrRecords(value: unknown): TtsrInjectionRecord[] {
  if (!Array.isArray(value)) return [];
  return value.filter(
    (record): record is TtsrInjectionRecord =>
      typeof record === "object" && record !== null && typeof (record as { name?: unknown }).name === "string",
  );
}

/** The chains in force: configured ones first (path order), then one per legacy model role. */
function configuredChains(
  chains: ReadonlyMap<string, ConfiguredModelChainEntry>,
  models: ReadonlyMap<string, string>,
): Array<[string, ConfiguredModelChain]> {
  const out: Array<[string, ConfiguredModelChain]> = [];
  for (const [role, entry] of chains) {
    // Only the chain's own fields: the entry's id, parent and time are not part of the chain.
    const chain: ConfiguredModelChain = { role, entries: entry.entries, origin: entry.origin };
    if (entry.identity !== undefined) chain.identity = entry.identity;
    if (entry.explicitHead !== undefined) chain.explicitHead = entry.explicitHead;
    out.push([role, chain]);
  }
  for (const [role, model] of models) {
    if (!chains.has(role)) out.push([role, { role, entries: [model], origin: LEGACY_CHAIN_ORIGIN, explicitHead: true }]);
  }
  return out;
}

function emptyContext(): SessionContext {
  return {
    messages: [],
    thinkingLevel: "off",
    serviceTier: undefined,
    models: {},
    configuredModelChains: {},
    injectedTtsrRules: [],
    injectedTtsrRuleRecords: [],
    ttsrMessageCount: 0,
    selectedMCPToolNames: [],
    hasPersistedMCPToolSelection: false,
    selectedDiscoveredBuiltinToolNames: undefined,
    hasPersistedDiscoveredBuiltinToolSelection: false,
    mode: "none",
    modeData: undefined,
  };
}

/** `provider/model` of the last assistant message on the path that names both. */
function lastAssistantModel(path: PathView): string | undefined {
  return findLastMessage(path.length, path.typeAt, path.entriesAt, (entry) => {
    if (entry.type !== "message" || isUnknownEntry(entry)) return undefined;
    const { role, provider, model } = entry.message;
    return role === "assistant" && typeof provider === "string" && typeof model === "string" ? `${provider}/${model}` : undefined;
  });
}

function lastEntryWithId(entries: readonly FileEntry[]): FileEntry | undefined {
  for (let i = entries.length - 1; i >= 0; i--) {
    const entry = entries[i]!;
    if (entryIdOf(entry) !== undefined) return entry;
  }
  return undefined;
}

function collectCompacted(path: PathView, compactionAt: number, out: ContextMessage[]): void {
  const compaction = path.entriesAt([compactionAt])[0] as CompactionEntry;
  const remote = remoteHistory(compaction.preserveData);
  const { summary, shortSummary, tokensBefore } = compaction;
  const timestamp = Date.parse(compaction.timestamp);
  // Two literals rather than a later assignment keep the peer's key order in serialised output,
  // and no `providerPayload` key unless there is one.
  const opening: CompactionSummaryAgentMessage =
    remote === undefined
      ? { role: "compactionSummary", summary, shortSummary, tokensBefore, timestamp }
      : { role: "compactionSummary", summary, shortSummary, tokensBefore, providerPayload: remote, timestamp };
  out.push(opening);
  if (remote === undefined) {
    const keptFrom = keptStart(path, compactionAt, compaction.firstKeptEntryId);
    if (keptFrom !== -1) collectMessages(path, keptFrom, compactionAt, out);
  }
  collectMessages(path, compactionAt + 1, path.length, out);
}

/**
 * Position of `firstKeptEntryId` before the compaction, or -1. Searched backwards because the
 * kept tail is short next to the history the compaction summarised.
 */
function keptStart(path: PathView, compactionAt: number, id: string | undefined): number {
  if (id === undefined) return -1;
  for (let i = compactionAt - 1; i >= 0; i--) {
    if (path.idAt(i) === id) return i;
  }
  return -1;
}

/** The provider payload of an OpenAI remote compaction, when the entry preserved one. */
function remoteHistory(preserveData: Record<string, unknown> | undefined): unknown {
  const remote = preserveData?.openaiRemoteCompaction;
  if (typeof remote !== "object" || remote === null) return undefined;
  const { provider, replacementHistory } = remote as Record<string, unknown>;
  if (typeof provider !== "string" || !Array.isArray(replacementHistory)) return undefined;
  return { type: "openaiResponsesHistory", provider, items: replacementHistory };
}

/** Appends the messages of `path[from..to)` to `out` (one array, never spread: paths are long). */
function collectMessages(path: PathView, from: number, to: number, out: ContextMessage[]): void {
  const indices: number[] = [];
  for (let i = from; i < to; i++) indices.push(i);
  for (const entry of path.entriesAt(indices)) {
    if (isUnknownEntry(entry)) continue;
    const message = toMessage(entry);
    if (message !== undefined) out.push(message);
  }
}

/**
 * The message an entry contributes, in the peer's shapes. Timestamps are parsed from the
 * entry's ISO time; an unparseable one gives `NaN`, as the peer does, since inventing a time
 * would be worse than admitting there is none.
 */
function toMessage(entry: SessionEntry): ContextMessage | undefined {
  switch (entry.type) {
    case "message":
      return entry.message;
    case "custom_message": {
      const { customType, content, display, details, attribution } = entry;
      return { role: "custom", customType, content, display, details, attribution, timestamp: Date.parse(entry.timestamp) };
    }
    case "branch_summary":
      // An empty summary carries nothing for the model; the peer drops it as well.
      if (entry.summary === "") return undefined;
      return { role: "branchSummary", summary: entry.summary, fromId: entry.fromId, timestamp: Date.parse(entry.timestamp) };
    default:
      return undefined;
  }
}
