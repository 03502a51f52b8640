/**
 * Token and cost totals of a session, as GJC's `getUsageStatistics` reports them, kept by an
 * accumulator that takes each entry once in O(1), so a manager never walks the file again.
 */
import type { FileEntry } from "./schemas.js";

/** Totals over every entry of a session file (all branches, not just the current path). */
export interface UsageStatistics {
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
  premiumRequests: number;
  /** the sum of `usage.cost.total` */
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
  return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}

/**
 * The usage record of an entry: the `usage` of an assistant message, or the `details.usage` of
 * a {@link SUBAGENT_TOOL_NAME} tool result. Records kept as read count too: the totals describe
 * the file, not what this version can type.
 */
export function usageRecordOf(entry: FileEntry): Record<string, unknown> | undefined {
  if (entry.type !== "message") return undefined;
  const message = asObject(entry.message);
  if (message?.role === "assistant") return asObject(message.usage);
  if (message?.role === "toolResult" && message.toolName === SUBAGENT_TOOL_NAME) return asObject(asObject(message.details)?.usage);
  return undefined;
}

/**
 * The six counts of a usage record, or `undefined` when one is not a finite, non-negative
 * number. The four token counts must be present; `premiumRequests` and `cost.total` default to 0.
 */
export function usageCounts(usage: Record<string, unknown>): UsageStatistics | undefined {
  const counts: UsageStatistics = {
    input: usage.input as number,
    output: usage.output as number,
    cacheRead: usage.cacheRead as number,
    cacheWrite: usage.cacheWrite as number,
    premiumRequests: (usage.premiumRequests ?? 0) as number,
    cost: (asObject(usage.cost)?.total ?? 0) as number,
  };
  // Number.isFinite is false for anything that is not a number.
  return FIELDS.every((field) => Number.isFinite(counts[field]) && counts[field] >= 0) ? counts : undefined;
}

/**
 * Running usage totals. A record that is malformed, or would carry a total past
 * `Number.MAX_SAFE_INTEGER` (where sums stop being exact), is skipped whole and counted in
 * {@link skipped}, so no total mixes in part of a record.
 */
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
