/**
 * The peers' module-level format functions: a file's records as one list, header first, made of the loader's parts so
 * a file reads the same through either door ({@link loadSession} also keeps every line, for a lossless rewrite).
 */
import { scanJsonl } from "./jsonl.js";
import { checkHeaderVersion, markIfUnknown } from "./load.js";
import { declaredVersion, migrateSession, type HeaderRecord } from "./migrate.js";
import { replayPatches, type ReplayItem } from "./patches.js";
import type { JsonRecord } from "./salvage.js";
import { CURRENT_SESSION_VERSION, isPatchRecordType, isUnknownEntry, type CompactionEntry, type FileEntry, type SessionHeader } from "./schemas.js";

/** One record of a session file as the peers list them (GJC's `FileEntry`): the header or an entry. */
export type SessionFileEntry = SessionHeader | FileEntry;

/**
 * A file's records, header first, leniently (lines without a record skipped, torn ones salvaged). A first record that
 * is a header has its version checked and, from v4, its patches replayed; patches are never in the result. Nothing is
 * migrated ({@link migrateSessionEntries}). @throws SessionFormatError `version_too_new` / `invalid_version`
 */
export function parseSessionEntries(content: string): SessionFileEntry[] {
  const records: JsonRecord[] = [];
  scanJsonl(content, { record: (value) => records.push(value), invalid: () => {} });
  const first = records[0];
  if (first?.type !== "session") return typeEntries(records.filter((record) => !isPatchRecordType(record.type)));
  const version = checkHeaderVersion(first);
  const items: ReplayItem[] = [];
  for (let i = 1; i < records.length; i++) {
    const value = records[i]!;
    // Replay reports skipped patches by line; this parse keeps no report, so the index will do.
    items.push(isPatchRecordType(value.type) ? { kind: "patch", value, line: i + 1 } : { kind: "entry", value });
  }
  const replayed = replayPatches(first as SessionHeader, items, version);
  return [replayed.header, ...typeEntries(replayed.entries)];
}

function typeEntries(records: JsonRecord[]): FileEntry[] {
  for (const record of records) markIfUnknown(record);
  return records as FileEntry[];
}

/** Migrates parsed records in place as a load does, retyping what a step fixes; the version is the first header's (else 1). */
export function migrateSessionEntries(entries: SessionFileEntry[]): void {
  const at = entries.findIndex((entry) => entry.type === "session");
  const header = at === -1 ? undefined : (entries[at] as SessionHeader);
  const stand = (header ?? { type: "session", id: "" }) as HeaderRecord;
  if (declaredVersion(stand) >= CURRENT_SESSION_VERSION) return;
  // In place, so the records stay the objects `entries` holds.
  const records = entries.filter((_, index) => index !== at) as JsonRecord[];
  migrateSession(stand, records, { inPlace: true });
  for (const record of records) markIfUnknown(record);
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
