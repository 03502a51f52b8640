/** `auditAgentDir`: the whole audit of one agent directory, as a report document. */
import fs from "node:fs";
import path from "node:path";

import { insecureAncestors, SecureDir, SecureFsError } from "../fs/index.js";
import { moveAsideCommand } from "../storage/index.js";
import { ContentChecks, DEFAULT_STALE_AFTER_MS } from "./content.js";
import { AuditError } from "./errors.js";
import { assertAgentDirForFix, inLayout } from "./layout.js";
import { AUDIT_CONTENT_CODES, type AuditObject, type AuditRepair, type AuditReport } from "./schema.js";
import { UndoLog } from "./undo.js";
import { recordRefusal, walkDirectory } from "./walk.js";

/** Options of {@link auditAgentDir}. */
export interface AuditOptions {
  /**
   * Repair what is safe: modes and ACLs of objects the effective user owns inside the store's layout (the fs layer's
   * owner-only apply), each old mode written to `undoFile` first; the rest is refused in `repairs`. Only a directory
   * recognised as an agent directory is repaired.
   */
  readonly fix?: boolean;
  /** Staging files older than this are `stale_staging_file`; default one hour. */
  readonly staleAfterMs?: number;
  /** The current time in ms, for staleness; default `Date.now()`. */
  readonly now?: number;
  /** Also check the ancestors of the agent dir (`insecure_ancestor`); default true. One that stops the managed open is reported either way. */
  readonly ancestors?: boolean;
}

const CONTENT_CODES: ReadonlySet<string> = new Set(AUDIT_CONTENT_CODES);

/**
 * Audits `agentDir`: every object below it, walked by descriptor without following links, against the owner-only
 * rules; every session file, blob and staging file for integrity; the ancestors for writable-without-sticky
 * directories. Modifies nothing unless `fix` (then repairs the safe findings, in an agent directory only).
 *
 * @throws AuditError `agent_dir_not_found`, `agent_dir_unusable` (not a directory, or the OS refused to open it),
 * `not_agent_dir` (with `fix`: the filesystem root, the home directory, a home-like tree or any directory without the
 * layout; nothing was changed), `invalid_argument`
 */
export function auditAgentDir(agentDir: string, options: AuditOptions = {}): AuditReport {
  if (typeof agentDir !== "string" || agentDir.length === 0 || agentDir.includes("\0")) {
    throw new AuditError("invalid_argument", "the agent directory must be a non-empty path");
  }
  const started = Date.now();
  const absolute = path.resolve(agentDir);
  const fix = options.fix === true;
  const undo = fix ? new UndoLog(absolute, started) : undefined;
  const content = new ContentChecks({ staleAfterMs: options.staleAfterMs ?? DEFAULT_STALE_AFTER_MS, now: options.now ?? started, fix, undo });
  const { collector } = content;
  let st: fs.Stats;
  try {
    st = fs.lstatSync(absolute);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT") throw new AuditError("agent_dir_not_found", `no agent directory at ${absolute}`);
    // A directory above it that this user may not search (EACCES), a file where a directory is expected (ENOTDIR), ...
    throw new AuditError("agent_dir_unusable", `cannot examine ${absolute}: ${code ?? "unknown error"}`, { cause: error });
  }
  if (st.isSymbolicLink()) {
    collector.add(".", "symlink", "symlink_refused", "the agent directory is a symbolic link (never followed)");
  } else if (!st.isDirectory()) {
    throw new AuditError("agent_dir_unusable", `${absolute} is not a directory`);
  } else {
    if (fix) assertAgentDirForFix(absolute);
    try {
      const root = openRoot(absolute, st, content);
      if (root !== undefined) {
        try {
          walkDirectory(root, ".", [], content);
        } finally {
          root.close();
        }
      }
    } finally {
      undo?.close();
    }
  }
  const sessionsComplete = !collector
    .objects()
    .some((o) => (o.path === "." || o.path.startsWith("sessions")) && o.findings.some((f) => !CONTENT_CODES.has(f.code)));
  content.finish(sessionsComplete);
  adviseForeignBlobs(collector.objects(), absolute);
  const unreachable = collector.objects().some((o) => o.path === "." && o.findings.some((f) => f.detail === "insecure_ancestor"));
  // The ancestors lie above the tree held by descriptor, so they are examined by path, for
  // the report only (a managed open refuses such a chain race-free in the addon). Windows has
  // no such check: the addon trusts the ancestors there.
  if ((options.ancestors !== false || unreachable) && process.platform !== "win32") {
    for (const found of insecureAncestors(canonical(absolute))) {
      collector.add(found.path, "directory", "insecure_ancestor", found.problem, { detail: `0${found.mode.toString(8)}` });
    }
  }
  const objects = collector.objects();
  let errors = 0;
  let warnings = 0;
  for (const o of objects) for (const f of o.findings) f.severity === "error" ? errors++ : warnings++;
  const report: AuditReport = {
    schema: "gjc-session-audit/1",
    agentDir: absolute,
    startedAt: new Date(started).toISOString(),
    durationMs: Date.now() - started,
    clean: objects.length === 0,
    counts: { directories: content.directories, files: content.files, sessions: content.sessions, blobs: content.blobs, errors, warnings },
    objects,
  };
  if (fix) report.repairs = [...collector.repairs, ...refusals(objects, collector.repairs)];
  if (undo?.path !== undefined) report.undoFile = undo.path;
  return report;
}

function openRoot(absolute: string, st: fs.Stats, content: ContentChecks): SecureDir | undefined {
  try {
    return SecureDir.openRoot(absolute);
  } catch (error) {
    if (!(error instanceof SecureFsError)) throw error;
    if (error.code === "permission_denied" || error.code === "not_found" || error.code === "not_directory") {
      throw new AuditError("agent_dir_unusable", `cannot open ${absolute}: ${error.code}`, { cause: error });
    }
    if (error.code === "insecure_ancestor") {
      // Nothing below may be opened through that chain; the ancestors themselves are reported
      // below (always, for this case).
      content.collector.add(".", "directory", "not_audited", "not opened: a directory above it can be replaced by another user", {
        detail: "insecure_ancestor",
      });
      return undefined;
    }
    const stat = { type: "directory", uid: st.uid, mode: st.mode, nlink: st.nlink } as const;
    return recordRefusal(
      ".",
      "directory",
      stat,
      error,
      content,
      () => SecureDir.openRoot(absolute, { repair: true }),
      () => rootAcl(absolute),
    );
  }
}

/** The ACL of the agent dir itself, read through its parent (opened as the user's own, whatever its mode). */
function rootAcl(absolute: string): ReturnType<SecureDir["aclOf"]> {
  const parent = SecureDir.openRoot(path.dirname(absolute), { owned: true });
  try {
    return parent.aclOf(path.basename(absolute), "directory");
  } finally {
    parent.close();
  }
}

// Every finding `fix` left alone is reported as refused, so a fix run accounts for all of them.
function refusals(objects: readonly AuditObject[], repairs: readonly AuditRepair[]): AuditRepair[] {
  const handled = new Set(repairs.map((r) => r.path));
  return objects
    .filter((object) => !handled.has(object.path))
    .map((object) => ({
      path: object.path,
      codes: [...new Set(object.findings.map((f) => f.code))],
      outcome: "refused",
      reason: inLayout(object.path) ? "not_repairable" : "outside_layout",
    }));
}

/**
 * The agent directory's path with its parent canonicalised, as a managed open resolves it. The directory itself is
 * never opened by name here: whoever can swap it (the owner of an insecure parent) would have this read their link.
 */
function canonical(absolute: string): string {
  try {
    return path.join(fs.realpathSync.native(path.dirname(absolute)), path.basename(absolute));
  } catch {
    return absolute; // the walk already reported what is wrong with the directory itself
  }
}

/** A blob directory another user owns (only they or root could repair it) gets, in its owner finding, the command that moves it aside. */
function adviseForeignBlobs(objects: readonly AuditObject[], agentDir: string): void {
  const finding = objects.find((o) => o.path === "blobs")?.findings.find((f) => f.code === "owner_mismatch");
  if (finding === undefined) return;
  const owner = Number(finding.detail);
  const command = moveAsideCommand(path.join(agentDir, "blobs"), Number.isSafeInteger(owner) ? owner : undefined);
  finding.message += `; move it aside and the next image makes a new one: ${command}`;
}
