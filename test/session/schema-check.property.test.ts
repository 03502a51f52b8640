import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { checkOf, entryCheckFor, schemaChecks, type SchemaCheck } from "../../src/session/schema-check.js";
import {
  ENTRY_SCHEMAS,
  EntryPatchRecordSchema,
  HeaderPatchRecordSchema,
  SESSION_ENTRY_TYPES,
  SessionEntrySchema,
  SessionHeaderSchema,
} from "../../src/session/schemas.js";

/** One valid sample per known entry type: the starting points for mutation. */
const base = { id: "aaaa0001", parentId: null, timestamp: "t" };
const samples: Record<string, Record<string, unknown>> = {
  message: { type: "message", ...base, message: { role: "user", content: "hi" } },
  model_change: { type: "model_change", ...base, model: "p/m", role: "default", cleared: false },
  thinking_level_change: { type: "thinking_level_change", ...base, thinkingLevel: "high" },
  service_tier_change: { type: "service_tier_change", ...base, serviceTier: null },
  compaction: { type: "compaction", ...base, summary: "s", firstKeptEntryId: "x", tokensBefore: 3, preserveData: {} },
  branch_summary: { type: "branch_summary", ...base, fromId: "root", summary: "s", fromExtension: true },
  custom: { type: "custom", ...base, customType: "c", data: [1] },
  custom_message: { type: "custom_message", ...base, customType: "c", content: [{ type: "text", text: "t" }], display: true, attribution: "agent" },
  label: { type: "label", ...base, targetId: "x", label: "l" },
  ttsr_injection: { type: "ttsr_injection", ...base, injectedRules: ["a"], ttsrMessageCount: 2 },
  session_init: { type: "session_init", ...base, systemPrompt: "p", task: "t", tools: ["read"] },
  mode_change: { type: "mode_change", ...base, mode: "plan", data: { planFile: "/p" } },
  mcp_tool_selection: { type: "mcp_tool_selection", ...base, selectedToolNames: ["s.t"], selectedDiscoveredBuiltinToolNames: [] },
  discovered_builtin_tool_selection: { type: "discovered_builtin_tool_selection", ...base, selectedToolNames: [], mutationCorrelationId: "m" },
  configured_model_chain: {
    type: "configured_model_chain",
    ...base,
    role: "default",
    entries: ["p/m"],
    origin: "settings",
    identity: "i",
    explicitHead: true,
    cleared: false,
  },
  session_info: { type: "session_info", ...base, name: "n" },
};
const checks = schemaChecks();
/** Each zod schema, the check built from the same definition, a valid sample and the fields to aim at. */
type Case = readonly [z.ZodType, SchemaCheck, Record<string, unknown>, string[]];
const entryCases = (type: (typeof SESSION_ENTRY_TYPES)[number]): Case[] => [
  [ENTRY_SCHEMAS[type], checks.ENTRY_SCHEMAS[type], samples[type]!, shapeKeys(ENTRY_SCHEMAS[type])],
  // The union, through the same samples: a change of `type` must move to another option.
  [SessionEntrySchema, checks.SessionEntrySchema, samples[type]!, [...shapeKeys(ENTRY_SCHEMAS[type]), "type"]],
];
const cases: Case[] = [
  ...SESSION_ENTRY_TYPES.flatMap(entryCases),
  [SessionHeaderSchema, checks.SessionHeaderSchema, { type: "session", version: 5, id: "s", cwd: "/w", titleSource: "user" }, shapeKeys(SessionHeaderSchema)],
  // pi's shape of a model change: provider and modelId instead of model.
  [
    ENTRY_SCHEMAS.model_change,
    checks.ENTRY_SCHEMAS.model_change,
    { type: "model_change", ...base, provider: "p", modelId: "m" },
    shapeKeys(ENTRY_SCHEMAS.model_change),
  ],
  [HeaderPatchRecordSchema, checks.HeaderPatchRecordSchema, { type: "header_patch", patch: { title: "t" } }, shapeKeys(HeaderPatchRecordSchema)],
  [
    EntryPatchRecordSchema,
    checks.EntryPatchRecordSchema,
    { type: "entry_patch", entryId: "e", patch: { message: { role: "user" } } },
    shapeKeys(EntryPatchRecordSchema),
  ],
];

/** Values that sit on the edges of the checks: wrong types, non-finite numbers, nesting. */
const oddValue = fc.oneof(
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 2 }) },
  {
    weight: 3,
    arbitrary: fc.constantFrom(
      undefined,
      null,
      Number.POSITIVE_INFINITY,
      Number.NaN,
      -0,
      1.5,
      7,
      "",
      "user",
      "agent",
      "auto",
      [],
      {},
      ["x"],
      [1],
      [{ type: "text" }],
      [{}],
      { role: "user" },
      { role: 1 },
    ),
  },
);
/** A change to one field: set it to `value`, or remove it. */
interface Change {
  key: string;
  value: unknown;
  remove: boolean;
}

function shapeKeys(schema: z.ZodType): string[] {
  const shape = (schema as unknown as { def: { shape?: object } }).def.shape;
  return shape === undefined ? [] : Object.keys(shape);
}

/** Changes aimed mostly at the fields `fields` names, sometimes at any name. */
function changes(fields: string[]): fc.Arbitrary<Change[]> {
  const key = fc.oneof({ weight: 4, arbitrary: fc.constantFrom(...fields) }, { weight: 1, arbitrary: fc.string({ maxLength: 6 }) });
  return fc.array(fc.record({ key, value: oddValue, remove: fc.boolean() }), { maxLength: 4 });
}

function mutate(sample: Record<string, unknown>, list: Change[]): Record<string, unknown> {
  const out: Record<string, unknown> = { ...sample };
  for (const { key, value, remove } of list) {
    if (remove) delete out[key];
    else out[key] = value;
  }
  return out;
}

describe("compiled schema checks", () => {
  it("accept every sample", () => {
    for (const type of SESSION_ENTRY_TYPES) expect(entryCheckFor(type)?.(samples[type])).toBe(true);
  });

  it("answer exactly as safeParse does", () => {
    const nestedFields = ["role", "title", "titleSource", "cwd", "message", "planFile"];
    const scenario = fc
      .nat(cases.length - 1)
      .chain((pick) => fc.tuple(fc.constant(pick), changes((cases[pick] as Case)[3]), fc.option(changes(nestedFields), { nil: undefined })));
    fc.assert(
      fc.property(scenario, ([pick, list, nested]) => {
        const [schema, check, sample] = cases[pick] as Case;
        const value = mutate(sample, list);
        // Also damage the nested objects, where the samples have them.
        for (const key of ["message", "patch", "data", "preserveData"]) {
          const inner = value[key];
          if (nested !== undefined && typeof inner === "object" && inner !== null && !Array.isArray(inner)) {
            value[key] = mutate(inner as Record<string, unknown>, nested);
          }
        }
        expect(check(value)).toBe(schema.safeParse(value).success);
      }),
      { numRuns: 5000 },
    );
  });

  it("answer as zod does for every construct the builder knows, beyond the format's own uses", () => {
    // A required z.unknown() field must be present; a record wants a plain object; a strict
    // object refuses unknown keys; refinements run only after the shape holds.
    const define = (zod: typeof z) =>
      zod.union([
        zod.looseObject({ kind: zod.literal("a"), any: zod.unknown(), counts: zod.record(zod.string(), zod.number().int().min(0).max(9)) }),
        zod
          .strictObject({ kind: zod.enum(["b", "c"]), flag: zod.boolean().nullable().optional(), list: zod.array(zod.string()).optional() })
          .refine((value) => value.kind !== "c" || value.flag === true),
      ]);
    const schema = define(z);
    const check = checkOf(define as never);
    // Values no JSON text gives, as a caller of validateSession may pass: only zod's plain objects are records.
    const notJson = fc.constantFrom(new Date(0), Object.create(null) as object, new Map(), Object.assign(Object.create({ inherited: 1 }) as object, { x: 1 }));
    const field = fc.oneof(
      oddValue,
      notJson,
      fc.dictionary(fc.constantFrom("x", "y", "constructor"), oddValue, { maxKeys: 2 }),
      fc.array(oddValue, { maxLength: 2 }),
    );
    const member = fc.oneof(fc.constantFrom("a", "b", "c", true, false, 0, 3, 12, 2.5), field);
    const value = fc.oneof(
      { weight: 1, arbitrary: oddValue },
      {
        weight: 4,
        arbitrary: fc.record(
          {
            kind: fc.constantFrom("a", "b", "c", "d"),
            any: member,
            counts: fc.oneof(field, fc.dictionary(fc.string({ maxLength: 2 }), member, { maxKeys: 2 })),
            flag: member,
            list: member,
            other: member,
          },
          { requiredKeys: [] },
        ),
      },
    );
    fc.assert(
      fc.property(value, (candidate) => {
        expect(check(candidate)).toBe(schema.safeParse(candidate).success);
      }),
      { numRuns: 5000 },
    );
  });

  it("know no entry type that is not a schema key", () => {
    expect(entryCheckFor("valueOf")).toBeUndefined();
    expect(entryCheckFor("header_patch")).toBeUndefined();
  });
});
