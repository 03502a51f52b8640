/**
 * The sessions GJC's `continueRecent` tries for a workspace with a managed destination, best first:
 * this terminal's breadcrumb, when it was left in the same workspace or in a linked git worktree of
 * the same repository (a `--worktree` session continued from the main checkout), then the picker's
 * rows for the workspace (its scope, its legacy sessions, the project's own transcripts), newest
 * first. A breadcrumb naming a file no longer there is followed to its copy in the scope (see
 * {@link copiedLegacySession}). Each is
 * tried strictly ({@link openSelected}); GJC's typed refusals stop the resume.
 */
import fs from "node:fs";
import path from "node:path";

import { readBreadcrumb, stdinTtyPath, terminalIdFromEnv } from "../manager/breadcrumbs.js";
import { resumeSkipOf, type SkippedSession } from "../manager/session-info.js";
import type { SessionStorage } from "../storage/index.js";
import { defaultAgentDir } from "../scope/index.js";
import { SessionArtifactCapacityError, SessionMigrationBusyError, SessionMigrationPolicyError, SessionTranscriptOversizedError } from "./errors.js";
import { copiedLegacySession } from "./legacy-resume.js";
import { listManagedForPicker } from "./picker-listing.js";
import { inspectTranscript, type ResumeSessionIdentity } from "./strict-open.js";

/** Largest `.git` file or `commondir` read: each holds one path. */
const GIT_POINTER_MAX_BYTES = 4096;

/** A git working tree's own git directory and the repository's common one, both with links resolved. */
interface GitDirs {
  gitDir: string;
  commonDir: string;
}

/** The first line of the small text file `file`, or `undefined` when it cannot be read. */
function firstLine(file: string): string | undefined {
  try {
    const stat = fs.lstatSync(file);
    if (!stat.isFile() || stat.size > GIT_POINTER_MAX_BYTES) return undefined;
    return fs.readFileSync(file, "utf8").split(/\r?\n/, 1)[0]?.trim();
  } catch {
    return undefined;
  }
}

function realDir(dir: string): string | undefined {
  try {
    return fs.realpathSync(dir);
  } catch {
    return undefined;
  }
}

/**
 * The git directories of the working tree holding `dir`: the nearest ancestor with a `.git` entry. A linked worktree's
 * `.git` is a file naming its git directory, whose `commondir` names the repository's; a main checkout's is the directory.
 */
function gitDirsOf(dir: string): GitDirs | undefined {
  for (let at = path.resolve(dir); ; at = path.dirname(at)) {
    const dotGit = path.join(at, ".git");
    let stat: fs.Stats | undefined;
    try {
      stat = fs.lstatSync(dotGit);
    } catch {
      stat = undefined;
    }
    if (stat?.isDirectory() === true || stat?.isFile() === true) {
      const pointer = stat.isFile() ? firstLine(dotGit) : undefined;
      const named = stat.isDirectory()
        ? dotGit
        : pointer?.startsWith("gitdir:") === true
          ? path.resolve(at, pointer.slice("gitdir:".length).trim())
          : undefined;
      const gitDir = named === undefined ? undefined : realDir(named);
      if (gitDir === undefined) return undefined;
      const common = firstLine(path.join(gitDir, "commondir"));
      const commonDir = common === undefined ? gitDir : realDir(path.resolve(gitDir, common));
      return commonDir === undefined ? undefined : { gitDir, commonDir };
    }
    if (path.dirname(at) === at) return undefined;
  }
}

/** Whether `a` and `b` are different working trees of one repository (a linked worktree and its main checkout, or two linked ones). */
export function areLinkedWorktrees(a: string, b: string): boolean {
  const first = gitDirsOf(a);
  const second = gitDirsOf(b);
  return first !== undefined && second !== undefined && first.commonDir === second.commonDir && first.gitDir !== second.gitDir;
}

/** The terminal whose breadcrumb is read: the configured one, else the detected one; `undefined` for none. */
function terminalOf(terminalId: string | null | undefined): string | undefined {
  if (terminalId === null) return undefined;
  if (terminalId !== undefined) return terminalId;
  const detected = terminalIdFromEnv(process.env, stdinTtyPath());
  return detected.kind === "terminal" ? detected.id : undefined;
}

/** The session this terminal's breadcrumb names for `cwd` (or a linked worktree of it); `undefined` when there is none to try. */
async function breadcrumbSession(cwd: string, agentDir: string, terminalId: string | null | undefined): Promise<string | undefined> {
  const terminal = terminalOf(terminalId);
  if (terminal === undefined) return undefined;
  const crumb = await readBreadcrumb(agentDir, terminal);
  if (crumb.kind !== "found") return undefined;
  if (path.resolve(crumb.cwd) !== path.resolve(cwd) && !areLinkedWorktrees(crumb.cwd, cwd)) return undefined;
  if (fs.existsSync(crumb.sessionFile)) return crumb.sessionFile;
  return copiedLegacySession(crumb.sessionFile, crumb.cwd, agentDir) ?? crumb.sessionFile;
}

/** The files `continueRecent` tries for `cwd` with a managed destination below `agentDir` (default agent directory when `undefined`), each once, best first. */
export async function* managedResumeCandidates(cwd: string, agentDir: string | undefined, terminalId: string | null | undefined): AsyncGenerator<string> {
  const seen = new Set<string>();
  const crumb = await breadcrumbSession(cwd, agentDir ?? defaultAgentDir(), terminalId);
  if (crumb !== undefined) {
    seen.add(path.resolve(crumb));
    yield crumb;
  }
  for (const row of await listManagedForPicker(cwd, agentDir)) {
    if (seen.has(row.path)) continue;
    seen.add(row.path);
    yield row.path;
  }
}

/** What a strict open gives back, as {@link openSelected} reads it. */
type StrictOpen<M> = { kind: "opened"; manager: M } | { kind: "error"; reason: string; message?: string; size?: number };

/**
 * One candidate of a managed `continueRecent`: inspected, then opened strictly by `open`. A candidate that cannot be resumed
 * as it is (malformed, changed, gone) or that another writer holds (to `skipped`) is passed over; an over-large one, or a
 * legacy one the policy, the migration limits or a running migration refuses, stops the resume with GJC's typed error.
 * @throws SessionTranscriptOversizedError, SessionMigrationPolicyError, SessionArtifactCapacityError, SessionMigrationBusyError
 */
export async function openSelected<M>(
  file: string,
  storage: SessionStorage | undefined,
  skipped: SkippedSession[],
  open: (identity: ResumeSessionIdentity) => Promise<StrictOpen<M>>,
): Promise<M | undefined> {
  const inspected = inspectTranscript(file, storage);
  if (inspected.kind === "error") {
    if (inspected.reason === "oversized") throw new SessionTranscriptOversizedError(inspected.size ?? 0);
    return undefined;
  }
  let opened: StrictOpen<M>;
  try {
    opened = await open(inspected.identity);
  } catch (error) {
    const skip = resumeSkipOf(file, error);
    if (skip === undefined) throw error;
    skipped.push(skip);
    return undefined;
  }
  if (opened.kind === "opened") return opened.manager;
  switch (opened.reason) {
    case "legacy_migration_disabled":
      throw new SessionMigrationPolicyError();
    case "artifact_capacity_exceeded":
      throw new SessionArtifactCapacityError(opened.message ?? "Legacy session artifacts exceed the migration capacity.");
    case "migration_busy":
      throw new SessionMigrationBusyError();
    case "oversized":
      throw new SessionTranscriptOversizedError(opened.size ?? 0);
    default:
      return undefined;
  }
}
