/**
 * Replay of the v4/v5 append-only patch records.
 *
 * A patch never edits a record in place: the effective header and entries are copies, and the
 * patch records themselves stay in the session's line list, so a rewrite writes them back and a
 * later load replays them again to the same result (replaying a patch over its own effect is a
 * no-op, since each patch sets values rather than changing them).
 */
import type { JsonRecord } from "./salvage.js";
import { schemaChecks } from "./schema-check.js";
import type { EntryPatchRecord, HeaderPatchRecord, SessionHeader } from "./schemas.js";

/** Why a patch record was not applied. */
export type PatchSkipCode =
  /** the record does not match its schema (an extra key in `patch`, a value of the wrong type) */
  | "invalid_patch"
  /** `entryId` names no entry that comes before the patch in the file */
  | "unknown_target"
  /** `entryId` names an entry that is not a `message` */
  | "target_not_message"
  /** the file's on-disk version is below 4, where patch records have no meaning */
  | "version_below_4";

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

/** One item of the ordered input of {@link replayPatches}. */
export type ReplayItem =
  | { kind: "entry"; value: JsonRecord }
  | { kind: "patch"; value: JsonRecord; line: number };

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
 * Applies the patch records in `items` in file order. Patches replay only when the version the
 * file declared on disk (before any in-memory migration) is at least 4: an older file cannot
 * hold patches written by a writer that knew them. A `header_patch` sets the fields it carries
 * (`title`, `titleSource`, `cwd`); an `entry_patch` replaces the `message` of the closest earlier
 * `message` entry with that id and touches nothing else. Every patch that is not applied is
 * listed in the report with its line and a code.
 */
export function replayPatches<H extends SessionHeader>(header: H, items: Iterable<ReplayItem>, onDiskVersion: number): ReplayResult<H> {
  const replay = onDiskVersion >= FIRST_PATCH_VERSION;
  const report: PatchReport = { applied: 0, skipped: [] };
  const entries: JsonRecord[] = [];
  const indexById = new Map<string, number>();
  let effectiveHeader = header;
  const skip = (item: { value: JsonRecord; line: number }, code: PatchSkipCode): void => {
    report.skipped.push({ line: item.line, code, record: item.value });
  };
  for (const item of items) {
    if (item.kind === "entry") {
      if (typeof item.value.id === "string") indexById.set(item.value.id, entries.length);
      entries.push(item.value);
    } else if (!replay) {
      skip(item, "version_below_4");
    } else if (item.value.type === "header_patch") {
      if (!schemaChecks().HeaderPatchRecordSchema(item.value)) {
        skip(item, "invalid_patch");
        continue;
      }
      effectiveHeader = { ...effectiveHeader, ...(item.value as unknown as HeaderPatchRecord).patch };
      report.applied += 1;
    } else {
      const valid = schemaChecks().EntryPatchRecordSchema(item.value);
      const index = valid ? indexById.get((item.value as unknown as EntryPatchRecord).entryId) : undefined;
      const target = index === undefined ? undefined : entries[index];
      if (!valid) skip(item, "invalid_patch");
      else if (index === undefined || target === undefined) skip(item, "unknown_target");
      else if (target.type !== "message") skip(item, "target_not_message");
      else {
        // The patch's own message object (from the raw record, not zod's copy) keeps every field.
        entries[index] = { ...target, message: (item.value.patch as { message: unknown }).message };
        report.applied += 1;
      }
    }
  }
  return { header: effectiveHeader, entries, report };
}
