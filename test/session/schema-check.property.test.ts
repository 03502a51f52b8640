import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { z } from "zod";
import { compileSchemaCheck, entryCheckFor } from "../../src/session/schema-check.js";
import {
  ENTRY_SCHEMAS,
  EntryPatchRecordSchema,
  HeaderPatchRecordSchema,
  SESSION_ENTRY_TYPES,
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
  configured_model_chain: { type: "configured_model_chain", ...base, role: "default", entries: ["p/m"], origin: "settings", identity: "i", explicitHead: true, cleared: false },
  session_info: { type: "session_info", ...base, name: "n" },
};
const others: Array<[z.ZodType, Record<string, unknown>]> = [
  [SessionHeaderSchema, { type: "session", version: 5, id: "s", cwd: "/w", titleSource: "user" }],
  // pi's shape of a model change: provider and modelId instead of model.
  [ENTRY_SCHEMAS.model_change, { type: "model_change", ...base, provider: "p", modelId: "m" }],
  [HeaderPatchRecordSchema, { type: "header_patch", patch: { title: "t" } }],
  [EntryPatchRecordSchema, { type: "entry_patch", entryId: "e", patch: { message: { role: "user" } } }],
];

/** Values that sit on the edges of the checks: wrong types, non-finite numbers, nesting. */
const oddValue = fc.oneof(
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 2 }) },
  { weight: 3, arbitrary: fc.constantFrom(undefined, null, Number.POSITIVE_INFINITY, Number.NaN, -0, 1.5, 7, "", "user", "agent", "auto", [], {}, ["x"], [1], [{ type: "text" }], [{}], { role: "user" }, { role: 1 }) },
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
  const key = fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom(...fields) },
    { weight: 1, arbitrary: fc.string({ maxLength: 6 }) },
  );
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
    const cases: Array<[z.ZodType, Record<string, unknown>]> = [
      ...SESSION_ENTRY_TYPES.map((type): [z.ZodType, Record<string, unknown>] => [ENTRY_SCHEMAS[type], samples[type] as Record<string, unknown>]),
      ...others,
    ];
    const compiled = cases.map(([schema, sample]) => [schema, compileSchemaCheck(schema), sample] as const);
    const nestedFields = ["role", "title", "titleSource", "cwd", "message", "planFile"];
    const scenario = fc.nat(compiled.length - 1).chain((pick) =>
      fc.tuple(
        fc.constant(pick),
        changes(shapeKeys((compiled[pick] as (typeof compiled)[number])[0])),
        fc.option(changes(nestedFields), { nil: undefined }),
      ),
    );
    fc.assert(
      fc.property(scenario, ([pick, list, nested]) => {
        const [schema, check, sample] = compiled[pick] as (typeof compiled)[number];
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
      { numRuns: 3000 },
    );
  });

  it("know no entry type that is not a schema key", () => {
    expect(entryCheckFor("valueOf")).toBeUndefined();
    expect(entryCheckFor("header_patch")).toBeUndefined();
  });
});
