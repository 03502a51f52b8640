/**
 * The audit walk: every object of the store's layout below the agent directory (its other names are not looked at),
 * reached by descriptor through `SecureDir` and never through a link, each directory's entries in name order. The
 * content checks see every entry first, then each directory and file that passed the owner-only open (the legacy-source
 * open in a legacy folder of `sessions/`, as migration reads it); one that fails is explained from its no-follow `stat` (every deviation, not just the first the open met) and,
 * with `fix`, repaired when that is safe.
 */
import { SecureFsError, type SecureDir, type SecureFile, type SecureStat } from "../fs/index.js";
import type { ContentChecks } from "./content.js";
import { inLayout, isLegacySource } from "./layout.js";
import { AUDIT_FIXABLE_CODES, AUDIT_FS_CODES, type AuditFindingCode } from "./schema.js";
import { removedAcl } from "./undo.js";

const FS_CODES: ReadonlySet<string> = new Set(AUDIT_FS_CODES);
// Codes a stat explains on its own; an open error with one of these adds nothing new.
const STAT_CODES: ReadonlySet<string> = new Set(["owner_mismatch", "mode_mismatch", "hardlink_refused"]);

/** Walks `dir` (already opened and verified, or repaired) and everything below it. */
export function walkDirectory(dir: SecureDir, rel: string, segments: readonly string[], checks: ContentChecks): void {
  const { collector } = checks;
  checks.directory(rel, segments);
  let entries;
  try {
    entries = dir.list();
  } catch (error) {
    if (!(error instanceof SecureFsError)) throw error;
    collector.add(rel, "directory", fsCode(error.code), `cannot list: ${error.code}`);
    return;
  }
  // Name order, so reports are stable from run to run.
  entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const { name, type } of entries) {
    // Only the store's layout is examined: another name in the agent dir (the agent's settings, a user's notes, a
    // whole home tree given by mistake) is not the store's to read, judge or repair.
    if (rel === "." && !inLayout(name)) continue;
    const below = rel === "." ? name : `${rel}/${name}`;
    const path = [...segments, name];
    checks.entry(dir, name, below, type);
    if (type === "directory" || type === "file") {
      // A file directly in `sessions/` is not in a legacy folder: only a folder and what lies below it are sources.
      const source = isLegacySource(below) && (type === "directory" || path.length > 2);
      const handle = openChecked(dir, name, below, type, checks, source);
      if (handle === undefined) continue;
      try {
        if (type === "directory") walkDirectory(handle as SecureDir, below, path, checks);
        else checks.file(handle as SecureFile, below, path);
      } finally {
        handle.close();
      }
    } else if (type === "symlink") {
      collector.add(below, type, "symlink_refused", "a symbolic link inside the agent directory (never followed)");
    } else {
      collector.add(below, type, "not_regular_file", `a ${type} inside the agent directory`);
    }
  }
}

/** Maps a `SecureFsError` code onto a finding code. */
function fsCode(code: string): AuditFindingCode {
  if (code === "not_directory") return "not_regular_file";
  return FS_CODES.has(code) ? (code as AuditFindingCode) : "io_error";
}

/**
 * Opens `name` with the owner-only checks (with the legacy-source ones when `source`), or records (and with `fix`
 * repairs) the refusal; `undefined` when it cannot be examined further.
 */
function openChecked(
  dir: SecureDir,
  name: string,
  rel: string,
  kind: "file" | "directory",
  checks: ContentChecks,
  source: boolean,
): SecureDir | SecureFile | undefined {
  const options = (repair: boolean) => (source ? { source: true } : { repair });
  const open = (repair: boolean): SecureDir | SecureFile => (kind === "directory" ? dir.openDir(name, options(repair)) : dir.openFile(name, options(repair)));
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
    if (error.code !== "not_found") checks.collector.add(rel, kind, fsCode(error.code), `cannot stat: ${error.code}`);
    return undefined;
  }
  return recordRefusal(
    rel,
    kind,
    st,
    failure,
    checks,
    () => open(true),
    () => dir.aclOf(name, kind),
    source,
  );
}

// The mode bits that make a legacy source unsafe: another user could change what migration copies.
const GROUP_OTHER_WRITE = 0o022;

function octal(mode: number): string {
  return `0${mode.toString(8).padStart(3, "0")}`;
}

/**
 * Records why the owner-only open of `rel` failed: every deviation `st` shows, plus the open's own code when the stat
 * does not explain it (an ACL, say). With `fix`, opens it again through `reopen` when every finding is a mode or ACL
 * problem of an object we own (a file with one link) inside the store's layout, after writing its old mode (and the
 * ACL `readAcl` reads) to the undo log, recording the repair or refusal, and returns the repaired handle. A directory that stays unopened is
 * marked `not_audited`. A legacy `source` is judged by the legacy rules (a mode is wrong only when group or others may
 * write) and is never repairable: it is the older tool's, outside the layout.
 */
export function recordRefusal<T extends { close(): void }>(
  rel: string,
  kind: "file" | "directory",
  st: Pick<SecureStat, "type" | "uid" | "mode" | "nlink">,
  failure: SecureFsError,
  { fix, collector, undo }: Pick<ContentChecks, "fix" | "collector" | "undo">,
  reopen: () => T,
  readAcl: () => { readonly access: Uint8Array; readonly default: Uint8Array } | undefined,
  source = false,
): T | undefined {
  const euid = process.geteuid?.();
  const owned = euid === undefined || st.uid === euid;
  const repairable = !source && owned && (kind === "directory" || st.nlink === 1);
  const codes: AuditFindingCode[] = [];
  const add = (code: AuditFindingCode, message: string, detail?: string): void => {
    codes.push(code);
    collector.add(rel, st.type, code, message, { ...(detail === undefined ? {} : { detail }), repairable });
  };
  if (!owned) add("owner_mismatch", `owned by uid ${st.uid}, not by the effective user ${euid}`, String(st.uid));
  const mode = st.mode & 0o7777;
  if (source) {
    if ((mode & GROUP_OTHER_WRITE) !== 0) add("mode_mismatch", `mode ${octal(mode)}: group or others may write to this legacy ${kind}`, octal(mode));
  } else {
    const expected = kind === "directory" ? 0o700 : 0o600;
    if (mode !== expected) add("mode_mismatch", `mode ${octal(mode)}, expected ${octal(expected)}`, octal(mode));
  }
  if (kind === "file" && st.nlink > 1) add("hardlink_refused", `${st.nlink} hard links`, String(st.nlink));
  if (!STAT_CODES.has(failure.code) || codes.length === 0) {
    const code = fsCode(failure.code);
    add(code, `refused by the ${source ? "legacy-source" : "owner-only"} check: ${failure.code}`, failure.code === code ? undefined : failure.code);
  }
  const blocking = codes.find((code) => !AUDIT_FIXABLE_CODES.has(code));
  if (fix) {
    // A legacy source would be repairable but for being the older tool's: it is refused as outside the layout.
    if (blocking !== undefined || (!repairable && !source)) {
      collector.repairs.push({ path: rel, codes: [...codes], outcome: "refused", reason: blocking ?? "not_repairable" });
    } else if (!inLayout(rel)) {
      collector.repairs.push({ path: rel, codes: [...codes], outcome: "refused", reason: "outside_layout" });
    } else {
      try {
        // The repair strips every ACL, also one the findings do not name (the open stopped at a mode the ACL's mask set).
        const found = removedAcl(readAcl);
        const acl = "unread" in found ? codes.some((code) => code.startsWith("acl_")) : found.access.length > 0 || found.default.length > 0;
        // Written down (and synced) first: a fix that dies half-way still leaves the record of what it changed.
        undo?.record(rel, mode, acl ? found : undefined);
        const handle = reopen();
        collector.repairs.push({ path: rel, codes: [...codes], outcome: "repaired", previousMode: octal(mode), ...(acl ? { aclRemoved: true } : {}) });
        collector.resolve(rel, codes);
        return handle;
      } catch (error) {
        if (!(error instanceof SecureFsError)) throw error;
        collector.repairs.push({ path: rel, codes: [...codes], outcome: "refused", reason: error.code });
      }
    }
  }
  if (kind === "directory") collector.add(rel, "directory", "not_audited", "not examined below this directory: it failed the owner-only check");
  return undefined;
}
