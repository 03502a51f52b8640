/**
 * Replay of the v4/v5 append-only patch records. A patch never edits a record: the effective
 * header and entries are copies, and the patch records stay among the session's lines, so a
 * rewrite keeps them and a later load replays them to the same result (each patch sets values).
 */
import type { JsonRecord } from "./salvage.js";
import { schemaChecks } from "./schema-check.js";
import type { EntryPatchRecord, HeaderPatchRecord, SessionHeader } from "./schemas.js";

/**
 * Why a patch record was not applied: it does not match its schema (`invalid_patch`), its
 * `entryId` names no earlier entry (`unknown_target`) or one that is not a `message`
 * (`target_not_message`), or the on-disk version is below 4, where patches mean nothing
 * (`version_below_4`).
 */
export type PatchSkipCode = "invalid_patch" | "unknown_target" | "target_not_message" | "version_below_4";

/** A patch record that was not applied, and why. */
export interface SkippedPatch {
  line: number;
  code: PatchSkipCode;
  /** the patch record itself (several records can share a salvaged line) */
  record: JsonRecord;
}

/** What replay did. */
export interface PatchReport {
  applied: number;
  skipped: SkippedPatch[];
}

/** One item of the ordered input of {@link replayPatches}; a header or an invalid piece is passed over. */
export type ReplayItem = { kind: "entry"; value: JsonRecord } | { kind: "patch"; value: JsonRecord; line: number } | { kind: "header" | "invalid" };

/** What {@link replayPatches} returns. */
export interface ReplayResult<H extends SessionHeader> {
  header: H;
  /** the entries (no patch records) in file order, patched ones replaced by patched copies */
  entries: JsonRecord[];
  report: PatchReport;
}

/** The lowest on-disk version whose patch records are replayed. */
export const FIRST_PATCH_VERSION = 4;

/**
 * Applies the patch records in `items` in file order, when the version the file declared on
 * disk (before migration) is at least 4: an older file cannot hold patches a writer meant. A
 * `header_patch` sets the fields it carries; an `entry_patch` replaces the `message` of the
 * closest earlier `message` entry with its id. Every patch not applied is reported with a code.
 */
export function replayPatches<H extends SessionHeader>(header: H, items: Iterable<ReplayItem>, onDiskVersion: number): ReplayResult<H> {
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
