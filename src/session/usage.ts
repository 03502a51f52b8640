/** A session's token and cost totals as GJC's `getUsageStatistics` reports them, kept by an O(1)-per-entry accumulator. */
import { isObject } from "./salvage.js";
import type { FileEntry } from "./schemas.js";

/** Totals over every entry of a session file (all branches, not just the current path); `cost` sums `usage.cost.total`. */
export interface UsageStatistics {
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
  premiumRequests: number;
  cost: number;
}

/** All zeros: the totals of a session with no usage yet. */
export function emptyUsageStatistics(): UsageStatistics {
  return { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, premiumRequests: 0, cost: 0 };
}

/** The tool whose results carry a sub-agent's usage in `details.usage`. */
const SUBAGENT_TOOL_NAME = "task";

const FIELDS: readonly (keyof UsageStatistics)[] = ["input", "output", "cacheRead", "cacheWrite", "premiumRequests", "cost"];

function asObject(value: unknown): Record<string, unknown> | undefined {
  return isObject(value) ? value : undefined;
}

/** An entry's usage record: an assistant's `usage`, a `task` result's `details.usage`; kept-as-read records count too. */
export function usageRecordOf(entry: FileEntry): Record<string, unknown> | undefined {
  if (entry.type !== "message") return undefined;
  const message = asObject(entry.message);
  if (message?.role === "assistant") return asObject(message.usage);
  if (message?.role === "toolResult" && message.toolName === SUBAGENT_TOOL_NAME) return asObject(asObject(message.details)?.usage);
  return undefined;
}

/**
 * The six counts of a usage record, `undefined` if one is no finite count. A missing
 * `premiumRequests` or `cost` counts 0; a present one must be valid (`null`, or a `cost` that is
 * not a record with a `total`, is a torn or poisoned record, not a zero), as GJC judges them.
 */
export function usageCounts(usage: Record<string, unknown>): UsageStatistics | undefined {
  const counts: UsageStatistics = {
    input: usage.input as number,
    output: usage.output as number,
    cacheRead: usage.cacheRead as number,
    cacheWrite: usage.cacheWrite as number,
    premiumRequests: (usage.premiumRequests === undefined ? 0 : usage.premiumRequests) as number,
    cost: (usage.cost === undefined ? 0 : asObject(usage.cost)?.total) as number,
  };
  // Number.isFinite is false for anything that is not a number.
  return FIELDS.every((field) => Number.isFinite(counts[field]) && counts[field] >= 0) ? counts : undefined;
}

/** Running usage totals; a record malformed or carrying a total past `MAX_SAFE_INTEGER` (inexact) is skipped whole, counted. */
export class UsageAccumulator {
  readonly #totals = emptyUsageStatistics();
  #skipped = 0;

  /** Adds the usage `entry` carries, if any. Returns false when its record was skipped. */
  add(entry: FileEntry): boolean {
    const record = usageRecordOf(entry);
    if (record === undefined) return true;
    const counts = usageCounts(record);
    if (counts === undefined || FIELDS.some((field) => this.#totals[field] + counts[field] > Number.MAX_SAFE_INTEGER)) {
      this.#skipped += 1;
      return false;
    }
    for (const field of FIELDS) this.#totals[field] += counts[field];
    return true;
  }

  /** A copy of the totals so far. */
  totals(): UsageStatistics {
    return { ...this.#totals };
  }

  /** How many usage records were skipped (malformed, or overflowing a total). */
  get skipped(): number {
    return this.#skipped;
  }
}

/** The totals over `entries` (a convenience over {@link UsageAccumulator}). */
export function computeUsageStatistics(entries: Iterable<FileEntry>): { totals: UsageStatistics; skipped: number } {
  const accumulator = new UsageAccumulator();
  for (const entry of entries) accumulator.add(entry);
  return { totals: accumulator.totals(), skipped: accumulator.skipped };
}
