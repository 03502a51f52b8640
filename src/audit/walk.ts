/**
 * The audit walk: every object below the agent directory, reached by descriptor through
 * `SecureDir` and never through a link. An object that passes the owner-only open is handed
 * to the content checks; one that fails is explained from its no-follow `stat` (every
 * deviation, not just the first the open met) and, with `fix`, repaired when that is safe.
 */
import { SecureFsError, type DirectoryBatch, type SecureDir, type SecureFile, type SecureStat } from "../fs/index.js";
import type { FindingCollector } from "./collector.js";
import { BatchBuffers, dropReadAhead, readAhead, readNow, type ReadAhead } from "./batch-reads.js";
import { HeldFile, type AuditFile } from "./held-file.js";
import { AUDIT_FIXABLE_CODES, AUDIT_FS_CODES, type AuditFindingCode, type AuditObjectType } from "./schema.js";

/** What the content checks see of the walk. */
export interface WalkVisitor {
  /** Every entry, before anything is opened (names alone decide staging and legacy data). */
  entry(dir: SecureDir, name: string, rel: string, type: AuditObjectType): void;
  /**
   * A regular file that passed the owner-only open. `segments` is its path below the agent
   * dir, valid only during the call (the walk reuses the array).
   */
  file(file: AuditFile, rel: string, segments: readonly string[]): void;
  /** A directory that passed the owner-only open (or was repaired), before its entries. */
  directory(rel: string, segments: readonly string[]): void;
}

/** Walk options. */
export interface WalkOptions {
  readonly fix: boolean;
  /**
   * Take the contents of files from the directory batch (the fast path). Without it every
   * file is opened and read one by one: the reference path the batch must agree with.
   */
  readonly batchReads: boolean;
  readonly collector: FindingCollector;
  readonly visitor: WalkVisitor;
}

const FS_CODES: ReadonlySet<string> = new Set(AUDIT_FS_CODES);
// Codes a stat explains on its own; an open error with one of these adds nothing new.
const STAT_CODES: ReadonlySet<string> = new Set(["owner_mismatch", "mode_mismatch", "hardlink_refused"]);
const DIR_MODE = 0o700;
const FILE_MODE = 0o600;

/**
 * Walks `dir` (already opened and verified, or repaired) and everything below it. Each
 * directory is read in one batch: a file the batch opened owner-only and read whole goes to
 * the visitor from memory; every other file (refused, too large, deferred) takes the
 * one-by-one path, which decides and reports it exactly as it would without the batch.
 */
export function walkDirectory(dir: SecureDir, rel: string, segments: readonly string[], options: WalkOptions): void {
  walkBelow(dir, rel, segments, options, new BatchBuffers(options.batchReads), undefined);
}

/**
 * Walks one directory: from its batch (`ahead`, read ahead while the walk was elsewhere, or
 * read now). While it walks a subdirectory, the next subdirectory in name order is read
 * ahead on the thread pool.
 */
function walkBelow(
  dir: SecureDir,
  rel: string,
  segments: readonly string[],
  options: WalkOptions,
  buffers: BatchBuffers,
  ahead: ReadAhead | undefined,
): void {
  const { collector, visitor } = options;
  visitor.directory(rel, segments);
  const depth = segments.length;
  let read: { batch: DirectoryBatch; buffer: Buffer };
  try {
    read = ahead === undefined ? readNow(dir, depth, buffers) : { batch: ahead.pending.finish(), buffer: ahead.buffer };
  } catch (error) {
    if (ahead !== undefined) buffers.give(depth, ahead.buffer, false);
    if (!(error instanceof SecureFsError)) throw error;
    collector.add(rel, "directory", fsCode(error.code), `cannot list: ${error.code}`);
    return;
  }
  const { batch, buffer } = read;
  const prefix = rel === "." ? "" : `${rel}/`;
  const seg2 = [...segments, ""];
  const order = sortedByName(batch);
  const nextDirectory = (from: number): ReadAhead | undefined => {
    if (!buffers.enabled) return undefined;
    for (let k = from; k < order.length; k++) {
      const i = order[k] as number;
      if (batch.type(i) === "directory") return readAhead(dir, batch, i, depth + 1, buffers);
    }
    return undefined;
  };
  let next = nextDirectory(0);
  let deferred = false;
  try {
    for (let k = 0; k < order.length; k++) {
      const i = order[k] as number;
      const name = batch.name(i);
      const type = batch.type(i);
      const rel2 = prefix + name;
      seg2[depth] = name;
      visitor.entry(dir, name, rel2, type);
      if (type === "directory") {
        const mine = next?.index === i ? next : undefined;
        if (mine !== undefined) next = undefined;
        const child = mine?.dir ?? openChecked(dir, name, rel2, "directory", options);
        if (child === undefined) continue;
        next ??= nextDirectory(k + 1);
        try {
          walkBelow(child as SecureDir, rel2, seg2.slice(), options, buffers, mine);
        } finally {
          child.close();
        }
      } else if (type === "file") {
        const content = batch.content(i);
        if (content !== undefined) {
          visitor.file(new HeldFile(batch, i, content, rel2), rel2, seg2);
          continue;
        }
        deferred ||= batch.outcome(i) === "deferred";
        const file = openChecked(dir, name, rel2, "file", options);
        if (file === undefined) continue;
        try {
          visitor.file(file as SecureFile, rel2, seg2);
        } finally {
          file.close();
        }
      } else if (type === "symlink") {
        collector.add(rel2, type, "symlink_refused", "a symbolic link inside the agent directory (never followed)");
      } else {
        collector.add(rel2, type, "not_regular_file", `a ${type} inside the agent directory`);
      }
    }
  } finally {
    if (next !== undefined) dropReadAhead(next, depth + 1, buffers);
    buffers.give(depth, buffer, deferred);
  }
}

// Entry indexes in name order, so reports are stable from run to run.
function sortedByName(batch: DirectoryBatch): number[] {
  const names: string[] = [];
  const order: number[] = [];
  for (let i = 0; i < batch.length; i++) {
    names.push(batch.name(i));
    order.push(i);
  }
  return order.sort((a, b) => {
    const x = names[a] as string;
    const y = names[b] as string;
    return x < y ? -1 : x > y ? 1 : 0;
  });
}

/** Maps a `SecureFsError` code onto a finding code. */
export function fsCode(code: string): AuditFindingCode {
  if (code === "not_directory") return "not_regular_file";
  return FS_CODES.has(code) ? (code as AuditFindingCode) : "io_error";
}

/** True when `fix` may touch an object with this stat: ours, and a file has one link. */
export function isRepairable(st: Pick<SecureStat, "uid" | "nlink">, kind: "file" | "directory"): boolean {
  const euid = process.geteuid?.();
  return (euid === undefined || st.uid === euid) && (kind === "directory" || st.nlink === 1);
}

/** Reports every deviation of `st` from the owner-only rules for `kind` through `add`. */
export function explainStat(
  st: Pick<SecureStat, "uid" | "mode" | "nlink">,
  kind: "file" | "directory",
  add: (code: AuditFindingCode, message: string, detail?: string) => void,
): AuditFindingCode[] {
  const codes: AuditFindingCode[] = [];
  const push = (code: AuditFindingCode, message: string, detail?: string): void => {
    codes.push(code);
    add(code, message, detail);
  };
  const euid = process.geteuid?.();
  const owned = euid === undefined || st.uid === euid;
  if (!owned) push("owner_mismatch", `owned by uid ${st.uid}, not by the effective user ${euid}`, String(st.uid));
  const expected = kind === "directory" ? DIR_MODE : FILE_MODE;
  const mode = st.mode & 0o7777;
  if (mode !== expected) {
    push("mode_mismatch", `mode ${octal(mode)}, expected ${octal(expected)}`, octal(mode));
  }
  if (kind === "file" && st.nlink > 1) push("hardlink_refused", `${st.nlink} hard links`, String(st.nlink));
  return codes;
}

function octal(mode: number): string {
  return `0${mode.toString(8).padStart(3, "0")}`;
}

/**
 * Opens `name` with the owner-only checks. On failure, records every finding and, with
 * `fix`, repairs (mode and ACLs of an object the user owns) or records the refusal.
 * Returns the open handle, or `undefined` when the object cannot be examined further.
 */
function openChecked(
  dir: SecureDir,
  name: string,
  rel: string,
  kind: "file" | "directory",
  options: WalkOptions,
): SecureDir | SecureFile | undefined {
  const { collector } = options;
  const open = (repair: boolean): SecureDir | SecureFile =>
    kind === "directory" ? dir.openDir(name, { repair }) : dir.openFile(name, { repair });
  let failure: SecureFsError;
  try {
    return open(false);
  } catch (error) {
    if (!(error instanceof SecureFsError)) throw error;
    failure = error;
  }
  if (failure.code === "not_found") return undefined; // removed while we walked
  let st: SecureStat;
  try {
    st = dir.stat(name);
  } catch (error) {
    if (!(error instanceof SecureFsError)) throw error;
    if (error.code === "not_found") return undefined;
    collector.add(rel, kind, fsCode(error.code), `cannot stat: ${error.code}`);
    return undefined;
  }
  return recordRefusal(rel, kind, st, failure, options, () => open(true));
}

/**
 * Records why the owner-only open of `rel` failed: every deviation `st` shows, plus the
 * open's own code when the stat does not explain it (an ACL, say). Then, with `fix`,
 * repairs through `reopen` when that is safe. Returns the repaired handle, if any.
 */
export function recordRefusal<T extends { close(): void }>(
  rel: string,
  kind: "file" | "directory",
  st: Pick<SecureStat, "type" | "uid" | "mode" | "nlink">,
  failure: SecureFsError,
  { fix, collector }: WalkOptions,
  reopen: () => T,
): T | undefined {
  const repairable = isRepairable(st, kind);
  const add = (code: AuditFindingCode, message: string, detail?: string): void =>
    collector.add(rel, st.type, code, message, { ...(detail === undefined ? {} : { detail }), repairable });
  const codes = explainStat(st, kind, add);
  if (!STAT_CODES.has(failure.code) || codes.length === 0) {
    const code = fsCode(failure.code);
    codes.push(code);
    add(code, `refused by the owner-only check: ${failure.code}`, failure.code === code ? undefined : failure.code);
  }
  return repairIfSafe(rel, kind, codes, repairable, fix, collector, reopen);
}

/**
 * With `fix`, opens the object again in repair mode when every finding is a mode or ACL
 * problem of an object we own, and records the repair or the refusal. A directory that stays
 * unopened is marked `not_audited`: nothing below it could be examined.
 */
function repairIfSafe<T extends { close(): void }>(
  rel: string,
  kind: "file" | "directory",
  codes: readonly AuditFindingCode[],
  repairable: boolean,
  fix: boolean,
  collector: FindingCollector,
  reopen: () => T,
): T | undefined {
  const blocking = codes.find((code) => !AUDIT_FIXABLE_CODES.has(code));
  if (fix) {
    if (!repairable || blocking !== undefined) {
      collector.repairs.push({ path: rel, codes: [...codes], outcome: "refused", reason: blocking ?? "not_repairable" });
    } else {
      try {
        const handle = reopen();
        collector.repairs.push({ path: rel, codes: [...codes], outcome: "repaired" });
        collector.resolve(rel, codes);
        return handle;
      } catch (error) {
        if (!(error instanceof SecureFsError)) throw error;
        collector.repairs.push({ path: rel, codes: [...codes], outcome: "refused", reason: error.code });
      }
    }
  }
  if (kind === "directory") {
    collector.add(rel, "directory", "not_audited", "not examined below this directory: it failed the owner-only check");
  }
  return undefined;
}
