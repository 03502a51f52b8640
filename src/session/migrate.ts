/**
 * In-memory migration of a session from any version 1..5 to the current one. Changed records are copied (or, `inPlace`,
 * changed where they are), unchanged ones shared; every step is gated on its start version, so a rerun changes nothing.
 */
import { newEntryId } from "./ids.js";
import type { JsonRecord } from "./salvage.js";
import { CURRENT_SESSION_VERSION, isPatchRecordType } from "./schemas.js";

/** A header as read: `type: "session"` and a string `id`; anything else as the file has it. */
export interface HeaderRecord extends JsonRecord {
  type: "session";
  id: string;
}

/** Options of {@link migrateSession}. */
export interface MigrationOptions {
  /** draws an entry id not yet taken; defaults to {@link newEntryId} (tests pin it) */
  newEntryId?: (has: (id: string) => boolean) => string;
  /** the caller gives up `entries`: records are changed in place, not copied (`loadSession`'s freshly parsed ones) */
  inPlace?: boolean;
}

/** The version a header declares, 1 when absent (others were refused by `checkHeaderVersion`). */
export function declaredVersion(header: HeaderRecord): number {
  return typeof header.version === "number" ? header.version : 1;
}

/**
 * Migrates `header` and `entries` (the records after it, patches included, same order and count out) to v5; `migratedFrom`
 * is the input's version, `null` when already current.
 * - v1 -> v2: each entry (not patch) gets a fresh id and its predecessor's as `parentId`; a compaction's
 *   `firstKeptEntryIndex` (header at 0) becomes `firstKeptEntryId` when it names an entry, else stays as a fact.
 * - v2 -> v3: a `message` of role `"hookMessage"` gets role `"custom"`. v3 -> v4 -> v5: only the version changes.
 */
export function migrateSession<H extends HeaderRecord>(
  header: H,
  entries: readonly JsonRecord[],
  options: MigrationOptions = {},
): { header: H; entries: JsonRecord[]; migratedFrom: number | null } {
  const from = declaredVersion(header);
  if (from >= CURRENT_SESSION_VERSION) return { header, entries: entries.slice(), migratedFrom: null };
  const own = options.inPlace === true ? <T extends object>(value: T): T => value : shallowCopy;
  let out = entries.slice();
  if (from < 2) out = assignIdsAndParents(out, options.newEntryId ?? newEntryId, own);
  if (from < 3) out = renameHookMessages(out, own);
  return { header: { ...header, version: CURRENT_SESSION_VERSION }, entries: out, migratedFrom: from };
}

/** Makes a record writable: a copy, or (in place) the record itself. */
type Own = <T extends object>(value: T) => T;

function shallowCopy<T extends object>(value: T): T {
  return { ...value };
}

function assignIdsAndParents(entries: JsonRecord[], draw: (has: (id: string) => boolean) => string, own: Own): JsonRecord[] {
  const taken = new Set<string>();
  const has = (id: string): boolean => taken.has(id);
  let parentId: string | null = null;
  const out = entries.map((entry) => {
    if (isPatchRecordType(entry.type)) return entry;
    const id = draw(has);
    taken.add(id);
    // New keys go last, as in the peers' migrated files.
    const migrated = own(entry);
    migrated.id = id;
    migrated.parentId = parentId;
    parentId = id;
    return migrated;
  });
  // A second pass, so an index may point forward as well as back; every entry is writable now.
  for (const entry of out) {
    const index = entry.firstKeptEntryIndex;
    if (entry.type !== "compaction" || typeof index !== "number" || !Number.isInteger(index)) continue;
    // File index 0 is the header; entry k of `out` is file index k + 1.
    const target = out[index - 1];
    if (target === undefined || isPatchRecordType(target.type)) continue;
    entry.firstKeptEntryId = target.id;
    delete entry.firstKeptEntryIndex;
  }
  return out;
}

function renameHookMessages(entries: JsonRecord[], own: Own): JsonRecord[] {
  return entries.map((entry) => {
    const message = entry.message;
    if (entry.type !== "message" || typeof message !== "object" || message === null || (message as { role?: unknown }).role !== "hookMessage") {
      return entry;
    }
    const migrated = own(entry);
    const renamed = own(message as Record<string, unknown>);
    renamed.role = "custom";
    migrated.message = renamed;
    return migrated;
  });
}
