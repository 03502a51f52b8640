/**
 * Replay of the v4/v5 append-only patch records. A patch edits no record: the effective header and entries are copies,
 * and the patches stay among the lines, so a rewrite keeps them and a later load replays them to the same result.
 */
import type { JsonRecord } from "./salvage.js";
import { schemaChecks } from "./schema-check.js";
import type { EntryPatchRecord, HeaderPatchRecord, SessionHeader } from "./schemas.js";

/**
 * Why a patch was not applied: it fails its schema (`invalid_patch`), its `entryId` names no earlier entry
 * (`unknown_target`) or no `message` (`target_not_message`), or the on-disk version is below 4 (`version_below_4`).
 */
export type PatchSkipCode = "invalid_patch" | "unknown_target" | "target_not_message" | "version_below_4";

/** What replay did; a skipped patch names its record, since several can share a salvaged line. */
export interface PatchReport {
  applied: number;
  skipped: { line: number; code: PatchSkipCode; record: JsonRecord }[];
}

/** One item of the ordered input of {@link replayPatches}; a header or an invalid piece is passed over. */
export type ReplayItem = { kind: "entry"; value: JsonRecord } | { kind: "patch"; value: JsonRecord; line: number } | { kind: "header" | "invalid" };

/** The lowest on-disk version whose patch records are replayed. */
export const FIRST_PATCH_VERSION = 4;

/**
 * Applies the patches in `items` in file order when the on-disk version (before migration) is 4+: an older file holds
 * no patch a writer meant. A `header_patch` sets its fields; an `entry_patch` replaces the `message` of the closest
 * earlier `message` entry with its id. Returns the entries (no patches), patched ones as copies, and the report.
 */
export function replayPatches<H extends SessionHeader>(
  header: H,
  items: Iterable<ReplayItem>,
  onDiskVersion: number,
): { header: H; entries: JsonRecord[]; report: PatchReport } {
  const replay = onDiskVersion >= FIRST_PATCH_VERSION;
  const report: PatchReport = { applied: 0, skipped: [] };
  const entries: JsonRecord[] = [];
  const indexById = new Map<string, number>();
  let effectiveHeader = header;
  for (const item of items) {
    if (item.kind === "entry") {
      if (typeof item.value.id === "string") indexById.set(item.value.id, entries.length);
      entries.push(item.value);
      continue;
    }
    if (item.kind !== "patch") continue;
    let code: PatchSkipCode | undefined;
    if (!replay) code = "version_below_4";
    else if (item.value.type === "header_patch") {
      if (!schemaChecks().HeaderPatchRecordSchema(item.value)) code = "invalid_patch";
      else effectiveHeader = { ...effectiveHeader, ...(item.value as unknown as HeaderPatchRecord).patch };
    } else if (!schemaChecks().EntryPatchRecordSchema(item.value)) code = "invalid_patch";
    else {
      const index = indexById.get((item.value as unknown as EntryPatchRecord).entryId);
      const target = index === undefined ? undefined : entries[index];
      if (index === undefined || target === undefined) code = "unknown_target";
      else if (target.type !== "message") code = "target_not_message";
      // The patch's own message object (the raw record's, not a zod copy) keeps every field.
      else entries[index] = { ...target, message: (item.value.patch as { message: unknown }).message };
    }
    if (code === undefined) report.applied += 1;
    else report.skipped.push({ line: item.line, code, record: item.value });
  }
  return { header: effectiveHeader, entries, report };
}
