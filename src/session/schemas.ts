/**
 * zod schemas and types of everything a session file holds: header, known entries, v4/v5 patch records. Objects are
 * loose, so a newer writer's fields survive a rewrite, and domains wide (real files carry a `thinkingLevel` of
 * `"inherit"`, which no spec lists): the schemas check shape, not policy.
 */
import type { z } from "zod";

import { lazySchemas, type Zod } from "./lazy-zod.js";
import type { StoredAgentMessage } from "./messages.js";

/** The session format version this library writes. Files with a greater version are refused. */
export const CURRENT_SESSION_VERSION = 5;

/** Builds every schema from `z` on first use (importing the package loads no zod); `schema-check.ts` runs it too. */
export function defineSchemas(z: Zod) {
  /** where the spec leaves the payload open */
  const JsonObjectSchema = z.record(z.string(), z.unknown());

  const AgentMessageSchema = z.looseObject({ role: z.string() }) as unknown as z.ZodType<StoredAgentMessage>;

  const SessionHeaderSchema = z.looseObject({
    type: z.literal("session"),
    version: z.number().int().min(1).max(CURRENT_SESSION_VERSION).optional(),
    id: z.string(),
    timestamp: z.string().optional(),
    cwd: z.string().optional(),
    title: z.string().optional(),
    titleSource: z.enum(["auto", "user"]).optional(),
    parentSession: z.string().optional(),
  });

  /** A tree entry of `type` with `fields`; `parentId` is `null` for a root entry. */
  const entry = <T extends string, F extends z.core.$ZodLooseShape>(type: T, fields: F) =>
    z.looseObject({ type: z.literal(type), id: z.string(), parentId: z.string().nullable(), timestamp: z.string(), ...fields });

  const ContentBlockSchema = z.looseObject({ type: z.string() });
  // `fromHook` is pi's name for `fromExtension`.
  const extensionFields = { details: z.unknown().optional(), fromExtension: z.boolean().optional(), fromHook: z.boolean().optional() };

  // In the spec's order (SESSION_ENTRY_TYPES); each type's meaning is on its exported type.
  const ENTRY_SCHEMAS = {
    message: entry("message", { message: AgentMessageSchema }),
    model_change: entry("model_change", {
      model: z.string().optional(),
      provider: z.string().optional(),
      modelId: z.string().optional(),
      role: z.string().optional(),
      cleared: z.boolean().optional(),
      previousModel: z.string().optional(),
      reason: z.string().optional(),
      thinkingLevel: z.string().nullable().optional(),
    }).refine((change) => typeof change.model === "string" || (typeof change.provider === "string" && typeof change.modelId === "string"), {
      message: "a model_change needs model, or provider and modelId",
      path: ["model"],
    }),
    thinking_level_change: entry("thinking_level_change", { thinkingLevel: z.string().nullable(), operatorIntent: z.unknown().optional() }),
    service_tier_change: entry("service_tier_change", { serviceTier: z.string().nullable() }),
    compaction: entry("compaction", {
      summary: z.string(),
      shortSummary: z.string().optional(),
      firstKeptEntryId: z.string().optional(),
      tokensBefore: z.number(),
      preserveData: JsonObjectSchema.optional(),
      ...extensionFields,
    }),
    branch_summary: entry("branch_summary", { fromId: z.string(), summary: z.string(), ...extensionFields }),
    custom: entry("custom", { customType: z.string(), data: z.unknown().optional() }),
    custom_message: entry("custom_message", {
      customType: z.string(),
      content: z.union([z.string(), z.array(ContentBlockSchema)]),
      display: z.boolean(),
      details: z.unknown().optional(),
      attribution: z.enum(["user", "agent"]).optional(),
    }),
    label: entry("label", { targetId: z.string(), label: z.string().optional() }),
    ttsr_injection: entry("ttsr_injection", {
      injectedRules: z.array(z.string()),
      injectedRuleRecords: z.unknown().optional(),
      ttsrMessageCount: z.number().optional(),
    }),
    session_init: entry("session_init", {
      systemPrompt: z.string(),
      task: z.string(),
      tools: z.array(z.string()),
      outputSchema: z.unknown().optional(),
      forkContext: z.unknown().optional(),
    }),
    mode_change: entry("mode_change", { mode: z.string(), data: JsonObjectSchema.optional() }),
    mcp_tool_selection: entry("mcp_tool_selection", {
      selectedToolNames: z.array(z.string()),
      selectedDiscoveredBuiltinToolNames: z.array(z.string()).optional(),
      mutationCorrelationId: z.string().optional(),
    }),
    discovered_builtin_tool_selection: entry("discovered_builtin_tool_selection", {
      selectedToolNames: z.array(z.string()),
      mutationCorrelationId: z.string().optional(),
    }),
    configured_model_chain: entry("configured_model_chain", {
      role: z.string(),
      entries: z.array(z.string()),
      origin: z.string(),
      identity: z.string().optional(),
      explicitHead: z.boolean().optional(),
      cleared: z.boolean().optional(),
    }),
    session_info: entry("session_info", { name: z.string().optional() }),
  } as const satisfies Record<SessionEntryType, unknown>;

  const e = ENTRY_SCHEMAS;
  const SessionEntrySchema = z.discriminatedUnion("type", [
    e.message,
    e.model_change,
    e.thinking_level_change,
    e.service_tier_change,
    e.compaction,
    e.branch_summary,
    e.custom,
    e.custom_message,
    e.label,
    e.ttsr_injection,
    e.session_init,
    e.mode_change,
    e.mcp_tool_selection,
    e.discovered_builtin_tool_selection,
    e.configured_model_chain,
    e.session_info,
  ]);

  const HeaderPatchRecordSchema = z.looseObject({
    type: z.literal("header_patch"),
    patch: z.strictObject({ title: z.string().optional(), titleSource: z.enum(["auto", "user"]).optional(), cwd: z.string().optional() }),
  });
  const EntryPatchRecordSchema = z.looseObject({ type: z.literal("entry_patch"), entryId: z.string(), patch: z.strictObject({ message: AgentMessageSchema }) });

  return { SessionHeaderSchema, ContentBlockSchema, ENTRY_SCHEMAS, SessionEntrySchema, HeaderPatchRecordSchema, EntryPatchRecordSchema };
}

type Schemas = ReturnType<typeof defineSchemas>;
type EntryOf<T extends SessionEntryType> = z.infer<Schemas["ENTRY_SCHEMAS"][T]>;

const schemas = lazySchemas(defineSchemas);

/** The header on line 1 (no `version` in v1): only `type` and `id` are required, but a mistyped field refuses it whole. */
export const SessionHeaderSchema = schemas.lazy("SessionHeaderSchema");

/** Every known entry schema by `type`. Of a `message` only `role` is checked: the payload is the agent's. */
export const ENTRY_SCHEMAS = schemas.lazy("ENTRY_SCHEMAS");

/** Any known entry, discriminated on `type` (strict validation reports paths through it). */
export const SessionEntrySchema = schemas.lazy("SessionEntrySchema");

/** `header_patch` (v4+): updates header metadata; strict, so a bad patch is skipped, not half-applied. */
export const HeaderPatchRecordSchema = schemas.lazy("HeaderPatchRecordSchema");

/** `entry_patch` (v4+): replaces the `message` of an existing `message` entry, nothing else. */
export const EntryPatchRecordSchema = schemas.lazy("EntryPatchRecordSchema");

/** The session header record. */
export type SessionHeader = z.infer<Schemas["SessionHeaderSchema"]>;

/** A `message` entry: a {@link StoredAgentMessage} as-is (an agent appends the narrower {@link AgentMessage}). */
export type MessageEntry = EntryOf<"message">;

/** A `model_change`: GJC's `model` (`"provider/id"`, optional `role` and `cleared`) or pi's `provider` and `modelId`. */
export type ModelChangeEntry = EntryOf<"model_change">;

/** A `thinking_level_change` entry: `null` is read as `"off"` by context reconstruction. */
export type ThinkingLevelChangeEntry = EntryOf<"thinking_level_change">;

/** A `service_tier_change` entry: `null` clears the tier. */
export type ServiceTierChangeEntry = EntryOf<"service_tier_change">;

/** A `compaction` entry; a v1 `firstKeptEntryIndex` that points at nothing migrates to no `firstKeptEntryId`. */
export type CompactionEntry = EntryOf<"compaction">;

/** A `branch_summary` entry: `fromId` is the literal `"root"` when the branch started at the root. */
export type BranchSummaryEntry = EntryOf<"branch_summary">;

/** A `custom` entry: extension state; never part of the model context. */
export type CustomEntry = EntryOf<"custom">;

/** A content block of a `custom_message`: text, image, or a type this version does not know. */
export type ContentBlock = z.infer<Schemas["ContentBlockSchema"]>;

/** A `custom_message` entry: extension text that does reach the model context. */
export type CustomMessageEntry = EntryOf<"custom_message">;

/** A `label` entry: an absent `label` clears the label of `targetId`. */
export type LabelEntry = EntryOf<"label">;

/** A `ttsr_injection` entry: rule names injected into the conversation. */
export type TtsrInjectionEntry = EntryOf<"ttsr_injection">;

/** A `session_init` entry: how a sub-agent session was started. */
export type SessionInitEntry = EntryOf<"session_init">;

/** A `mode_change` entry: the agent mode (for example `"plan"`) and its data. */
export type ModeChangeEntry = EntryOf<"mode_change">;

/** An `mcp_tool_selection` entry; `selectedDiscoveredBuiltinToolNames` is v4's field, v5 writes the next type. */
export type McpToolSelectionEntry = EntryOf<"mcp_tool_selection">;

/** A `discovered_builtin_tool_selection` entry: the v5 discovered built-in authority. */
export type DiscoveredBuiltinToolSelectionEntry = EntryOf<"discovered_builtin_tool_selection">;

/** A `configured_model_chain` (GJC): `role`'s fallback models, head first; the latest per role counts, `cleared` removes it. */
export type ConfiguredModelChainEntry = EntryOf<"configured_model_chain">;

/** A `session_info` entry (pi): the display name; a tree entry like any other (see `getSessionInfoName`). */
export type SessionInfoEntry = EntryOf<"session_info">;

/** A known, well-formed entry. */
export type SessionEntry = z.infer<Schemas["SessionEntrySchema"]>;

/** A `header_patch` record. */
export type HeaderPatchRecord = z.infer<Schemas["HeaderPatchRecordSchema"]>;

/** An `entry_patch` record. */
export type EntryPatchRecord = z.infer<Schemas["EntryPatchRecordSchema"]>;

/** The `"provider/id"` a `model_change` sets: its `model`, else pi's `provider` and `modelId` joined by `/`. */
export function modelChangeModel(entry: ModelChangeEntry): string | undefined {
  if (entry.model !== undefined) return entry.model;
  return entry.provider !== undefined && entry.modelId !== undefined ? `${entry.provider}/${entry.modelId}` : undefined;
}

/** The name a `session_info` gives: its `name` trimmed; `undefined` (cleared) when empty or absent, as pi 0.73.1 reads it. */
export function sessionInfoName(entry: SessionInfoEntry): string | undefined {
  const name = entry.name?.trim() ?? "";
  return name === "" ? undefined : name;
}

/** The `type` of a known entry. */
export type SessionEntryType = (typeof SESSION_ENTRY_TYPES)[number];

/** The known entry types, in the spec's order: exactly the keys of {@link ENTRY_SCHEMAS} (`satisfies` holds them equal). */
export const SESSION_ENTRY_TYPES = [
  "message",
  "model_change",
  "thinking_level_change",
  "service_tier_change",
  "compaction",
  "branch_summary",
  "custom",
  "custom_message",
  "label",
  "ttsr_injection",
  "session_init",
  "mode_change",
  "mcp_tool_selection",
  "discovered_builtin_tool_selection",
  "configured_model_chain",
  "session_info",
] as const;

/** Either patch record. */
export type PatchRecord = HeaderPatchRecord | EntryPatchRecord;

/** The `type` values that mark a patch record rather than a tree entry. */
export const PATCH_RECORD_TYPES = ["header_patch", "entry_patch"] as const;

/** True when `type` is one of {@link PATCH_RECORD_TYPES}. */
export function isPatchRecordType(type: unknown): boolean {
  return type === "header_patch" || type === "entry_patch";
}

/** Why a record was kept as an {@link UnknownEntry} instead of a typed entry (`nesting_too_deep`: past `MAX_ENTRY_DEPTH`, too deep to copy). */
export type UnknownEntryReason = "unknown_type" | "invalid_fields" | "nesting_too_deep";

/** Marks an {@link UnknownEntry}: a symbol key, which `JSON.stringify` never writes and no field can collide with. */
export const UNKNOWN_ENTRY: unique symbol = Symbol.for("gjc-session-store.unknown-entry");

/** A record kept as read (unknown `type` or fields failing its schema): written back unchanged, in the tree only by string ids. */
export interface UnknownEntry {
  readonly [UNKNOWN_ENTRY]: UnknownEntryReason;
  type: string;
  [key: string]: unknown;
}

/** A non-header, non-patch record of a loaded session, in file order. */
export type FileEntry = SessionEntry | UnknownEntry;

/** True when `entry` is a record kept verbatim rather than a typed entry. */
export function isUnknownEntry(entry: FileEntry): entry is UnknownEntry {
  return UNKNOWN_ENTRY in entry;
}

/** The entry's `id` when it is a string, else `undefined` (id-less records are never indexed). */
export function entryIdOf(entry: FileEntry): string | undefined {
  return typeof entry.id === "string" ? entry.id : undefined;
}

/** The entry's parent: a string id, `null` for an explicit root, `undefined` when it has no usable `parentId`. */
export function parentIdOf(entry: FileEntry): string | null | undefined {
  const parent = entry.parentId;
  return typeof parent === "string" || parent === null ? parent : undefined;
}
