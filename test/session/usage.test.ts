/**
 * Usage totals: which records count, how a bad or overflowing record is skipped as a whole.
 */
import { describe, expect, it } from "vitest";
import type { FileEntry } from "../../src/session/schemas.js";
import { computeUsageStatistics, emptyUsageStatistics, UsageAccumulator, usageCounts, usageRecordOf } from "../../src/session/usage.js";

let next = 0;
function entry(message: Record<string, unknown>, type = "message"): FileEntry {
  next += 1;
  return { type, id: `e${next}`, parentId: null, timestamp: "t", message } as unknown as FileEntry;
}
function usage(fields: Record<string, unknown> = {}): Record<string, unknown> {
  return { input: 10, output: 5, cacheRead: 2, cacheWrite: 1, cost: { total: 0.5 }, ...fields };
}
const assistant = (u: unknown) => entry({ role: "assistant", content: [], usage: u });
const toolResult = (toolName: string, details: unknown) => entry({ role: "toolResult", toolCallId: "c", toolName, content: [], details });

describe("usage records", () => {
  it("come from assistant usage and from the task tool's details.usage only", () => {
    expect(usageRecordOf(assistant(usage()))).toEqual(usage());
    expect(usageRecordOf(toolResult("task", { usage: usage({ input: 3 }) }))).toEqual(usage({ input: 3 }));
    expect(usageRecordOf(toolResult("read", { usage: usage() }))).toBeUndefined();
    expect(usageRecordOf(toolResult("task", { other: 1 }))).toBeUndefined();
    expect(usageRecordOf(toolResult("task", undefined))).toBeUndefined();
    expect(usageRecordOf(entry({ role: "user", content: "x", usage: usage() }))).toBeUndefined();
    expect(usageRecordOf(assistant(undefined))).toBeUndefined();
    expect(usageRecordOf(entry({ role: "assistant", usage: usage() }, "custom_message"))).toBeUndefined();
  });

  it("count premiumRequests and cost.total, 0 when absent; the token counts are required", () => {
    expect(usageCounts(usage({ premiumRequests: 2 }))).toEqual({ input: 10, output: 5, cacheRead: 2, cacheWrite: 1, premiumRequests: 2, cost: 0.5 });
    expect(usageCounts(usage({ cost: undefined }))).toMatchObject({ premiumRequests: 0, cost: 0 });
    for (const bad of [
      { input: -1 },
      { output: Number.NaN },
      { cacheRead: Number.POSITIVE_INFINITY },
      { cacheWrite: "1" },
      { input: undefined },
      { premiumRequests: -2 },
      { cost: { total: -0.1 } },
      { cost: { total: "0.1" } },
      { premiumRequests: null },
      { cost: null },
      { cost: {} },
      { cost: { input: 1 } },
      { cost: [] },
    ]) {
      expect(usageCounts(usage(bad))).toBeUndefined();
    }
  });
});

describe("UsageAccumulator", () => {
  it("adds records one at a time and counts skipped ones; totals are copies", () => {
    const accumulator = new UsageAccumulator();
    expect(accumulator.totals()).toEqual(emptyUsageStatistics());
    expect(accumulator.add(assistant(usage({ premiumRequests: 1 })))).toBe(true);
    expect(accumulator.add(toolResult("task", { usage: usage({ cost: { total: 0.25 } }) }))).toBe(true);
    expect(accumulator.add(entry({ role: "user", content: "hi" }))).toBe(true);
    expect(accumulator.add(assistant(usage({ input: -5 })))).toBe(false);
    const totals = accumulator.totals();
    expect(totals).toEqual({ input: 20, output: 10, cacheRead: 4, cacheWrite: 2, premiumRequests: 1, cost: 0.75 });
    expect(accumulator.skipped).toBe(1);
    totals.input = 0;
    expect(accumulator.totals().input).toBe(20);
  });

  it("skips a record that would carry any total past MAX_SAFE_INTEGER, and keeps none of it", () => {
    const accumulator = new UsageAccumulator();
    accumulator.add(assistant(usage({ output: Number.MAX_SAFE_INTEGER - 10 })));
    expect(accumulator.add(assistant(usage({ output: 11, input: 1000 })))).toBe(false);
    expect(accumulator.totals()).toMatchObject({ input: 10, output: Number.MAX_SAFE_INTEGER - 10 });
    expect(accumulator.add(assistant(usage({ output: 10 })))).toBe(true);
    expect(accumulator.totals().output).toBe(Number.MAX_SAFE_INTEGER);
    expect(accumulator.skipped).toBe(1);
  });

  it("computeUsageStatistics is the accumulator over a list", () => {
    const entries = [assistant(usage()), assistant("not an object"), assistant(usage({ input: null }))];
    expect(computeUsageStatistics(entries)).toEqual({
      totals: { input: 10, output: 5, cacheRead: 2, cacheWrite: 1, premiumRequests: 0, cost: 0.5 },
      skipped: 1,
    });
  });
});
