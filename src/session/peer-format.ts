/**
 * The format functions of the peers' session module, GJC-shaped: a whole file's records as one
 * list (header first), parsed leniently, migrated in place. They are thin shapes over the
 * loader's own parts (the JSONL scanner, the version check, patch replay, migration, entry
 * typing), so a file reads the same through either door; the loader ({@link loadSession}) stays
 * the way to open a session, because it also keeps every line for a lossless rewrite.
 */
import { scanJsonl } from "./jsonl.js";
import { checkHeaderVersion, markIfUnknown } from "./load.js";
import { declaredVersion, migrateSession, type HeaderRecord } from "./migrate.js";
import { replayPatches, type ReplayItem } from "./patches.js";
import type { JsonRecord } from "./salvage.js";
import {
  CURRENT_SESSION_VERSION,
  PATCH_RECORD_TYPES,
  type CompactionEntry,
  type FileEntry,
  type SessionHeader,
  isUnknownEntry,
} from "./schemas.js";

/**
 * One record of a session file as the peers list them: the header or an entry (typed, or kept
 * as read). GJC calls this `FileEntry`; here `FileEntry` is the non-header part.
 */
export type SessionFileEntry = SessionHeader | FileEntry;

const PATCH_TYPES: ReadonlySet<string> = new Set(PATCH_RECORD_TYPES);

function isHeader(record: { type: unknown } | undefined): record is SessionHeader {
  return record !== undefined && record.type === "session";
}

/**
 * Parses a session file's content into its records, header first, leniently: lines that hold no
 * record are skipped (torn or glued lines give up what salvage recovers). When the first record
 * is a session header its version is checked first; for a file at v4 or later its
 * `header_patch` records update the header and its `entry_patch` records replace an earlier
 * message's `message`. Patch records are never in the result. Nothing else is checked (a file
 * without a header parses to its entries) and nothing is migrated (see
 * {@link migrateSessionEntries}).
 *
 * @throws SessionFormatError `version_too_new` for a header version above
 *   {@link CURRENT_SESSION_VERSION}, `invalid_version` for one that is not an integer in 1..5
 */
export function parseSessionEntries(content: string): SessionFileEntry[] {
  const records: JsonRecord[] = [];
  scanJsonl(content, { record: (value) => records.push(value), invalid: () => {} });
  const first = records[0];
  if (!isHeader(first)) return typeEntries(records.filter((record) => !PATCH_TYPES.has(record.type)));
  const version = checkHeaderVersion(first);
  const items: ReplayItem[] = [];
  for (let i = 1; i < records.length; i++) {
    const value = records[i]!;
    // Replay reports skipped patches by line; this parse keeps no report, so the index will do.
    items.push(PATCH_TYPES.has(value.type) ? { kind: "patch", value, line: i + 1 } : { kind: "entry", value });
  }
  const replayed = replayPatches(first, items, version);
  return [replayed.header, ...typeEntries(replayed.entries)];
}

function typeEntries(records: JsonRecord[]): FileEntry[] {
  for (const record of records) markIfUnknown(record);
  return records as FileEntry[];
}

/**
 * Migrates a parsed file's records in place to {@link CURRENT_SESSION_VERSION}, by the same
 * steps a load takes: v1 entries get ids and a linear parent chain, v2 `hookMessage` roles
 * become `custom`, and the header's version becomes 5. The version is read from the first
 * session header in the list (1 when there is none, or when it has no version). Entries that a
 * step makes well-formed are typed again. A no-op at version 5 or above.
 */
export function migrateSessionEntries(entries: SessionFileEntry[]): void {
  const at = entries.findIndex((entry) => entry.type === "session");
  const header = at === -1 ? undefined : (entries[at] as SessionHeader);
  const stand = (header ?? { type: "session", id: "" }) as HeaderRecord;
  if (declaredVersion(stand) >= CURRENT_SESSION_VERSION) return;
  const positions: number[] = [];
  const records: JsonRecord[] = [];
  entries.forEach((entry, index) => {
    if (index === at) return;
    positions.push(index);
    records.push(entry as JsonRecord);
  });
  const migrated = migrateSession(stand, records, { inPlace: true });
  migrated.entries.forEach((record, i) => {
    markIfUnknown(record);
    entries[positions[i]!] = record as FileEntry;
  });
  if (header !== undefined) header.version = CURRENT_SESSION_VERSION;
}

/** The last typed `compaction` in `entries`, or `null` when there is none. */
export function getLatestCompactionEntry(entries: readonly SessionFileEntry[]): CompactionEntry | null {
  for (let i = entries.length - 1; i >= 0; i--) {
    const entry = entries[i]!;
    if (entry.type === "compaction" && !isUnknownEntry(entry as FileEntry)) return entry as CompactionEntry;
  }
  return null;
}
