/** Context reconstruction, by the spec's rules and by pi's: what the model sees, with which settings, from a leaf's root path. */

import type { CompactionSummaryAgentMessage, StoredAgentMessage } from "./messages.js";
import { entryIdOf, isUnknownEntry, modelChangeModel, sessionInfoName } from "./schemas.js";
import type { CompactionEntry, ConfiguredModelChainEntry, FileEntry, ModelChangeEntry, SessionEntry } from "./schemas.js";
import { arrayPathView, EntryIndex, findLastMessage, pathToRoot, type PathView } from "./tree.js";

/** A context message: a stored one as-is, or one made from an entry (`custom`, `branchSummary`, `compactionSummary`). */
export type ContextMessage = StoredAgentMessage;

/** One role's fallback models (`"provider/id"`, head first) as a `configured_model_chain` holds them; `origin`: who set it. */
export interface ConfiguredModelChain {
  role: string;
  entries: string[];
  origin: string;
  identity?: string;
  explicitHead?: boolean;
}

/** What a TTSR injection recorded about one rule, as written; `lastInjectedAt` is 0 for a rule known by name only. */
export interface TtsrInjectionRecord {
  name: string;
  lastInjectedAt?: number;
  [key: string]: unknown;
}

/** The `origin` of the chain made for a role with a model but no chain, so a session older than chains resumes with it. */
const LEGACY_CHAIN_ORIGIN = "legacy_session";

/** The entry types whose entries on the path set the context's state (compactions aside). */
const STATE_TYPES: ReadonlySet<string> = new Set([
  "thinking_level_change",
  "model_change",
  "configured_model_chain",
  "service_tier_change",
  "ttsr_injection",
  "mcp_tool_selection",
  "discovered_builtin_tool_selection",
  "mode_change",
]);
const STATE_OR_COMPACTION: ReadonlySet<string> = new Set([...STATE_TYPES, "compaction"]);

/** The model-facing state of a session at one leaf. */
export interface SessionContext {
  /** Messages in the order they are sent, compaction summary first when there is one. */
  messages: ContextMessage[];
  /** Latest `thinking_level_change` on the path; `"off"` when none (or when it was `null`). */
  thinkingLevel: string;
  /** Latest `service_tier_change`; `undefined` when none or when it cleared the tier. */
  serviceTier: string | undefined;
  /** Model per role (`"provider/id"`); `default` falls back to the assistant's until a default `model_change`. */
  models: Record<string, string>;
  /** Chain per role by its latest `configured_model_chain`; a role with a model but no chain gets a one-model legacy chain. */
  configuredModelChains: Record<string, ConfiguredModelChain>;
  /** Every rule any `ttsr_injection` on the path injected, first occurrence order, no repeats. */
  injectedTtsrRules: string[];
  /** Per injected rule, its latest `injectedRuleRecords` record, else `{ name, lastInjectedAt: 0 }`. */
  injectedTtsrRuleRecords: TtsrInjectionRecord[];
  /** The latest finite `ttsrMessageCount` of a `ttsr_injection` on the path; 0 when none. */
  ttsrMessageCount: number;
  /** `selectedToolNames` of the latest `mcp_tool_selection`; `[]` when there is none. */
  selectedMCPToolNames: string[];
  /** Whether the path holds an `mcp_tool_selection` (an empty selection is still a choice). */
  hasPersistedMCPToolSelection: boolean;
  /** The later of a `discovered_builtin_tool_selection` and v4's field of an `mcp_tool_selection`; `undefined`: neither. */
  selectedDiscoveredBuiltinToolNames: string[] | undefined;
  /** Whether the path holds a discovered built-in selection (either form). */
  hasPersistedDiscoveredBuiltinToolSelection: boolean;
  /** Latest `mode_change` and its `data`; `"none"` when there is none. */
  mode: string;
  modeData: Record<string, unknown> | undefined;
}

/**
 * Rebuilds the context at `leafId` in time linear in the path (plus indexing `entries` unless `byId`, such as
 * {@link SessionTree.index}, last holder of an id winning, is given).
 * - `null` gives the empty context; `undefined` or an unknown id means the last entry with an id.
 * - A `model_change` sets `models[role ?? "default"]` to `model` (or pi's `provider/modelId`), `cleared` deletes it;
 *   `default` falls back to the last assistant's `provider/model` only while no default change is on the path.
 * - Only the latest compaction counts: its summary, the path from its `firstKeptEntryId` (none when missing or
 *   dangling: replaying that history would undo it) up to it, then what follows. Preserved provider history
 *   (`preserveData.openaiRemoteCompaction`) travels as the summary's `providerPayload` instead of kept entries.
 * - Records kept verbatim link the path through their ids but add no state or messages.
 */
export function buildSessionContext(entries: readonly FileEntry[], leafId?: string | null, byId?: ReadonlyMap<string, FileEntry>): SessionContext {
  const path = contextPath(entries, leafId, byId);
  return buildContextOnPath(path === undefined ? undefined : arrayPathView(path));
}

/** {@link buildSessionContext} over a {@link PathView} (`undefined`: empty), reading only the entries the context needs. */
export function buildContextOnPath(path: PathView | undefined): SessionContext {
  const context: SessionContext = {
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
  if (path === undefined) return context;
  const models = new Map<string, string>();
  const chains = new Map<string, ConfiguredModelChainEntry>();
  const rules = new Set<string>();
  const ruleRecords = new Map<string, TtsrInjectionRecord>();
  let explicitDefaultModel = false;
  // Only entries that set state are read, and of the compactions only the last well-formed one: on a long path the
  // rest (nearly every entry) are skipped by their type alone.
  const stateful: number[] = [];
  const compactions: number[] = [];
  for (const i of path.indicesOfTypes(STATE_OR_COMPACTION)) (path.typeAt(i) === "compaction" ? compactions : stateful).push(i);
  let compactionAt = -1;
  for (let k = compactions.length - 1; k >= 0 && compactionAt === -1; k--)
    if (!isUnknownEntry(path.entriesAt([compactions[k]!])[0]!)) compactionAt = compactions[k]!;
  const stateEntries = path.entriesAt(stateful);
  for (const entry of stateEntries) {
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
        if (Number.isFinite(entry.ttsrMessageCount)) context.ttsrMessageCount = entry.ttsrMessageCount!;
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
    }
  }
  // Looked up once at the end, not on every message: only the last assistant can decide the default.
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

/** The path {@link buildSessionContext} works on, by its leaf rules; `undefined` for an empty context. */
export function contextPath(entries: readonly FileEntry[], leafId: string | null | undefined, byId?: ReadonlyMap<string, FileEntry>): FileEntry[] | undefined {
  if (leafId === null) return undefined;
  const index = byId ?? new EntryIndex(entries);
  const leaf = (leafId === undefined ? undefined : index.get(leafId)) ?? lastEntryWithId(entries);
  return leaf === undefined ? undefined : pathToRoot(leaf, index);
}

/** The well-formed records of `injectedRuleRecords` (an object with a string `name` each). */
function ttsrRecords(value: unknown): TtsrInjectionRecord[] {
  if (!Array.isArray(value)) return [];
  return value.filter((record): record is TtsrInjectionRecord => typeof record === "object" && typeof (record as { name?: unknown } | null)?.name === "string");
}

/** The chains in force: configured ones first (path order), then one per legacy model role. */
function configuredChains(chains: ReadonlyMap<string, ConfiguredModelChainEntry>, models: ReadonlyMap<string, string>): Array<[string, ConfiguredModelChain]> {
  const out: Array<[string, ConfiguredModelChain]> = [];
  for (const [role, entry] of chains) {
    // Only the chain's own fields: the entry's id, parent and time are not part of the chain.
    const chain: ConfiguredModelChain = { role, entries: entry.entries, origin: entry.origin };
    if (entry.identity !== undefined) chain.identity = entry.identity;
    if (entry.explicitHead !== undefined) chain.explicitHead = entry.explicitHead;
    out.push([role, chain]);
  }
  for (const [role, model] of models) if (!chains.has(role)) out.push([role, { role, entries: [model], origin: LEGACY_CHAIN_ORIGIN, explicitHead: true }]);
  return out;
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
  for (let i = entries.length - 1; i >= 0; i--) if (entryIdOf(entries[i]!) !== undefined) return entries[i];
  return undefined;
}

function collectCompacted(path: PathView, compactionAt: number, out: ContextMessage[]): void {
  const compaction = path.entriesAt([compactionAt])[0] as CompactionEntry;
  const remote = remoteHistory(compaction.preserveData);
  const { summary, shortSummary, tokensBefore } = compaction;
  const timestamp = Date.parse(compaction.timestamp);
  // The peer's key order, and no `providerPayload` key unless there is one.
  const payload = remote === undefined ? {} : { providerPayload: remote };
  const opening: CompactionSummaryAgentMessage = { role: "compactionSummary", summary, shortSummary, tokensBefore, ...payload, timestamp };
  out.push(opening);
  if (remote === undefined) {
    const keptFrom = keptStart(path, compactionAt, compaction.firstKeptEntryId);
    if (keptFrom !== -1) collectMessages(path, keptFrom, compactionAt, out);
  }
  collectMessages(path, compactionAt + 1, path.length, out);
}

/** Position of `firstKeptEntryId` before the compaction, or -1; backwards, as the kept tail is short. */
function keptStart(path: PathView, compactionAt: number, id: string | undefined): number {
  if (id === undefined || compactionAt === 0) return -1;
  return path.findId(id, compactionAt);
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

/** The message an entry contributes, in the peer's shapes; an unparseable time gives `NaN`, as the peer's does. */
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

/** A model as pi names it. */
export interface PiModelRef {
  provider: string;
  modelId: string;
}

/** The context of a session at one leaf in pi's shape: `thinkingLevel` as {@link buildSessionContext} reads it, `model` by {@link piModelOfPath}. */
export interface PiSessionContext {
  messages: ContextMessage[];
  thinkingLevel: string;
  model: PiModelRef | null;
}

/** Rebuilds the context at `leafId` as pi does: {@link buildSessionContext}'s leaf rules and messages, one model, no roles. */
export function buildPiSessionContext(entries: readonly FileEntry[], leafId?: string | null, byId?: ReadonlyMap<string, FileEntry>): PiSessionContext {
  const path = contextPath(entries, leafId, byId);
  if (path === undefined) return { messages: [], thinkingLevel: "off", model: null };
  const { messages, thinkingLevel } = buildContextOnPath(arrayPathView(path));
  return { messages, thinkingLevel, model: piModelOfPath(path) };
}

/**
 * The model at the end of `path` by pi's rule: the later of a default-role `model_change` (`provider`/`modelId`, or a
 * GJC `model` split at its first `/`; `null` when cleared) and an assistant message naming `provider` and `model`.
 * Unlike the spec's rule, an assistant after an explicit change wins: pi resumes with the model that answered last.
 */
export function piModelOfPath(path: readonly FileEntry[]): PiModelRef | null {
  for (let i = path.length - 1; i >= 0; i--) {
    const entry = path[i]!;
    if (isUnknownEntry(entry)) continue;
    if (entry.type === "model_change") {
      if ((entry.role ?? "default") !== "default") continue;
      return entry.cleared === true ? null : piModelOfChange(entry);
    }
    if (entry.type === "message") {
      const { role, provider, model } = entry.message;
      if (role === "assistant" && typeof provider === "string" && typeof model === "string") return { provider, modelId: model };
    }
  }
  return null;
}

function piModelOfChange(entry: ModelChangeEntry): PiModelRef | null {
  if (entry.provider !== undefined && entry.modelId !== undefined) return { provider: entry.provider, modelId: entry.modelId };
  const model = entry.model ?? "";
  const slash = model.indexOf("/");
  return slash <= 0 ? null : { provider: model.slice(0, slash), modelId: model.slice(slash + 1) };
}

/** The display name as pi 0.73.1 reads it: the file's latest `session_info`, on any branch; an empty name clears it. */
export function getSessionInfoName(entries: readonly FileEntry[]): string | undefined {
  for (let i = entries.length - 1; i >= 0; i--) {
    const entry = entries[i]!;
    if (entry.type === "session_info" && !isUnknownEntry(entry)) return sessionInfoName(entry);
  }
  return undefined;
}
