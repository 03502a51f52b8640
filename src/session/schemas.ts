/**
 * zod schemas and inferred types for everything a session JSONL file holds: the header, every
 * known entry type and the v4/v5 patch records.
 *
 * Every object schema is loose: fields this version does not know survive a load and are
 * written back on rewrite, because a newer writer may have put them there. Value domains are
 * kept wide on purpose (for example `thinkingLevel` is any string, not an enum): real files
 * carry values such as `"inherit"` that no spec lists, and a schema that rejected them would
 * hide real entries from the model context. The schemas check shape, not policy.
 */
import type { z } from "zod";

import { lazySchemas, type Zod } from "./lazy-zod.js";
import type { StoredAgentMessage } from "./messages.js";

/** The session format version this library writes. Files with a greater version are refused. */
export const CURRENT_SESSION_VERSION = 5;

/**
 * Builds every schema from `z`; run once, on first use (see {@link schemas}), so importing the
 * package does not load zod. It is also run against the check builder of `schema-check.ts`,
 * which answers the same calls with plain checks: the one statement of the format serves both.
 */
export function defineSchemas(z: Zod) {
  /** A JSON object with arbitrary fields; used where the spec leaves the payload open. */
  const JsonObjectSchema = z.record(z.string(), z.unknown());

  const AgentMessageSchema = z.looseObject({
    role: z.string(),
  }) as unknown as z.ZodType<StoredAgentMessage>;

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

  // In the spec's order (SESSION_ENTRY_TYPES); each type's meaning is on its exported type below.
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
    }).refine(
      (change) => typeof change.model === "string" || (typeof change.provider === "string" && typeof change.modelId === "string"),
      { message: "a model_change needs model, or provider and modelId", path: ["model"] },
    ),
    thinking_level_change: entry("thinking_level_change", {
      thinkingLevel: z.string().nullable(),
      operatorIntent: z.unknown().optional(),
    }),
    service_tier_change: entry("service_tier_change", { serviceTier: z.string().nullable() }),
    compaction: entry("compaction", {
      summary: z.string(),
      shortSummary: z.string().optional(),
      firstKeptEntryId: z.string().optional(),
      tokensBefore: z.number(),
      details: z.unknown().optional(),
      preserveData: JsonObjectSchema.optional(),
      fromExtension: z.boolean().optional(),
      /** pi's name for `fromExtension`; pi reads it to tell hook-made summaries from its own */
      fromHook: z.boolean().optional(),
    }),
    branch_summary: entry("branch_summary", {
      fromId: z.string(),
      summary: z.string(),
      details: z.unknown().optional(),
      fromExtension: z.boolean().optional(),
      /** pi's name for `fromExtension` */
      fromHook: z.boolean().optional(),
    }),
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
  } as const;

  const e = ENTRY_SCHEMAS;
  const SessionEntrySchema = z.discriminatedUnion("type", [
    e.message, e.model_change, e.thinking_level_change, e.service_tier_change, e.compaction, e.branch_summary,
    e.custom, e.custom_message, e.label, e.ttsr_injection, e.session_init, e.mode_change, e.mcp_tool_selection,
    e.discovered_builtin_tool_selection, e.configured_model_chain, e.session_info,
  ]);

  const HeaderPatchRecordSchema = z.looseObject({
    type: z.literal("header_patch"),
    patch: z.strictObject({
      title: z.string().optional(),
      titleSource: z.enum(["auto", "user"]).optional(),
      cwd: z.string().optional(),
    }),
  });

  const EntryPatchRecordSchema = z.looseObject({
    type: z.literal("entry_patch"),
    entryId: z.string(),
    patch: z.strictObject({ message: AgentMessageSchema }),
  });

  return { SessionHeaderSchema, ContentBlockSchema, ENTRY_SCHEMAS, SessionEntrySchema, HeaderPatchRecordSchema, EntryPatchRecordSchema };
}

/** The schemas, as {@link defineSchemas} builds them. */
type Schemas = ReturnType<typeof defineSchemas>;
/** The inferred type of the entry of `type`. */
type EntryOf<T extends SessionEntryType> = z.infer<Schemas["ENTRY_SCHEMAS"][T]>;

const schemas = lazySchemas(defineSchemas);

export type { AgentMessage, StoredAgentMessage } from "./messages.js";

/**
 * The header on line 1 of every session file. `version` is absent in v1 files. Only `type` and
 * `id` are required, as the load rule says; the other fields are optional, but a header that
 * carries one with the wrong type is refused as a whole (see `loadSession`), because every later
 * decision (scope, title, replay) trusts it.
 */
export const SessionHeaderSchema = schemas.lazy("SessionHeaderSchema");

/**
 * Every known entry schema, keyed by its `type`. Of a `message` only `role` is checked: the
 * message payload belongs to the agent and evolves with it, and a role this version does not
 * know is kept as read.
 */
export const ENTRY_SCHEMAS = schemas.lazy("ENTRY_SCHEMAS");

/** Any known entry, discriminated on `type` (strict validation reports paths through it). */
export const SessionEntrySchema = schemas.lazy("SessionEntrySchema");

/**
 * `header_patch` (v4+): updates header metadata. The payload is strict: a patch with a key it
 * must not carry, or a value of the wrong type, is skipped rather than half-applied.
 */
export const HeaderPatchRecordSchema = schemas.lazy("HeaderPatchRecordSchema");

/** `entry_patch` (v4+): replaces the `message` of an existing `message` entry, nothing else. */
export const EntryPatchRecordSchema = schemas.lazy("EntryPatchRecordSchema");

/** The session header record. */
export type SessionHeader = z.infer<Schemas["SessionHeaderSchema"]>;

/**
 * A `message` entry: an agent message stored as-is. Its static type is the role-typed
 * {@link StoredAgentMessage}; what an agent may append is the narrower {@link AgentMessage}.
 */
export type MessageEntry = EntryOf<"message">;

/**
 * A `model_change` entry, in either peer's shape: GJC writes `model` (`"provider/id"`) with an
 * optional `role` (absent means `"default"`) and may write `cleared: true` to drop a role; pi
 * writes `provider` and `modelId` and no role. A record must carry one of the two shapes; when
 * it carries both, `model` is the one GJC readers use (see {@link modelChangeModel}).
 */
export type ModelChangeEntry = EntryOf<"model_change">;

/** A `thinking_level_change` entry: `null` is read as `"off"` by context reconstruction. */
export type ThinkingLevelChangeEntry = EntryOf<"thinking_level_change">;

/** A `service_tier_change` entry: `null` clears the tier. */
export type ServiceTierChangeEntry = EntryOf<"service_tier_change">;

/**
 * A `compaction` entry. `firstKeptEntryId` is optional because a v1 file whose
 * `firstKeptEntryIndex` points at nothing migrates without one (an id is never invented).
 */
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

/**
 * An `mcp_tool_selection` entry. `selectedDiscoveredBuiltinToolNames` is the v4 combined field,
 * still readable; v5 writers put that authority in `discovered_builtin_tool_selection` instead.
 */
export type McpToolSelectionEntry = EntryOf<"mcp_tool_selection">;

/** A `discovered_builtin_tool_selection` entry: the v5 discovered built-in authority. */
export type DiscoveredBuiltinToolSelectionEntry = EntryOf<"discovered_builtin_tool_selection">;

/**
 * A `configured_model_chain` entry (GJC): the ordered fallback chain of models configured for
 * `role` (`entries` are `"provider/id"`, head first). The latest one per role on the path is in
 * force; `cleared: true` removes the role's chain.
 */
export type ConfiguredModelChainEntry = EntryOf<"configured_model_chain">;

/**
 * A `session_info` entry (pi): the session's display name. A tree entry like any other (it has
 * a parent and becomes the leaf); the latest one in the file decides the name, and an empty or
 * absent `name` clears it (see `getSessionInfoName`).
 */
export type SessionInfoEntry = EntryOf<"session_info">;

/** A known, well-formed entry. */
export type SessionEntry = z.infer<Schemas["SessionEntrySchema"]>;

/** A `header_patch` record. */
export type HeaderPatchRecord = z.infer<Schemas["HeaderPatchRecordSchema"]>;

/** An `entry_patch` record. */
export type EntryPatchRecord = z.infer<Schemas["EntryPatchRecordSchema"]>;

/**
 * The `"provider/id"` a `model_change` sets: its `model`, else pi's `provider` and `modelId`
 * joined by `/` (the form GJC's `model` has).
 */
export function modelChangeModel(entry: ModelChangeEntry): string | undefined {
  if (entry.model !== undefined) return entry.model;
  return entry.provider !== undefined && entry.modelId !== undefined ? `${entry.provider}/${entry.modelId}` : undefined;
}

/**
 * The name a `session_info` entry gives the session: its `name` trimmed, or `undefined` when
 * that is empty or absent (the entry clears the name, as pi 0.73.1 reads it).
 */
export function sessionInfoName(entry: SessionInfoEntry): string | undefined {
  const name = entry.name?.trim() ?? "";
  return name === "" ? undefined : name;
}

/** The `type` of a known entry. */
export type SessionEntryType = keyof Schemas["ENTRY_SCHEMAS"];

/** The known entry types, in the spec's order (the keys of {@link ENTRY_SCHEMAS}, checked below). */
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
] as const satisfies readonly SessionEntryType[];
// Compile-time proof that the list above names every entry schema.
const everyEntryType: Exclude<SessionEntryType, (typeof SESSION_ENTRY_TYPES)[number]> extends never ? true : false = true;
void everyEntryType;

/** Either patch record. */
export type PatchRecord = HeaderPatchRecord | EntryPatchRecord;

/** The `type` values that mark a patch record rather than a tree entry. */
export const PATCH_RECORD_TYPES = ["header_patch", "entry_patch"] as const;

/** Why a record was kept as an {@link UnknownEntry} instead of a typed entry. */
export type UnknownEntryReason = "unknown_type" | "invalid_fields";

/**
 * Marks an {@link UnknownEntry}. A symbol key, so `JSON.stringify` never writes it and no
 * on-disk field can collide with it.
 */
export const UNKNOWN_ENTRY: unique symbol = Symbol.for("gjc-session-store.unknown-entry");

/**
 * A record kept exactly as read because it is not a known, well-formed entry: either its `type`
 * is one this version does not know (a newer writer's), or its fields do not match the schema of
 * its type (for example a `custom` written without `id`). It is written back unchanged and takes
 * part in the tree only through a string `id`/`parentId`, if it has them.
 */
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

/**
 * The entry's parent: a string id, `null` for an explicit root, or `undefined` when the record
 * carries no usable `parentId`.
 */
export function parentIdOf(entry: FileEntry): string | null | undefined {
  const parent = entry.parentId;
  return typeof parent === "string" || parent === null ? parent : undefined;
}
