/**
 * pi's own sessions, where pi left them: `<agentDir>/sessions/--<encoded cwd>--/`. They are listed beside the managed
 * scopes' and copied into their workspace's scope (copy-retain: the source is only read) by the first factory that
 * writes to one. pi made those folders 0755 and files 0644; they are read by the legacy-source rules and never changed.
 */
import path from "node:path";

import {
  isLegacyFolderName,
  listLegacySessionFiles,
  MigrationError,
  listSessionCandidatesSync,
  openCandidateForWriteSync,
  type SessionCandidate,
} from "../migration/index.js";
import { canonicalizeTrustedPath, resolveManagedScope, ScopeError, SESSIONS_DIRECTORY, workspaceIdentity, type ManagedScope } from "../scope/index.js";
import { readSessionRecords } from "../manager/session-files.js";
import type { SessionHeader } from "../session/index.js";
import { recentSessions } from "./files.js";

/** Called with the directories preparing a scope made owner-only (see {@link preparedScope}). */
export type TightenedReport = (directories: readonly string[]) => void;

/** Directories this process already reported. */
const reported = new Set<string>();

/** The default report: one line on stderr (pi replaces `process.emitWarning` with a no-op, so a warning would be lost). */
function printTightened(directories: readonly string[]): void {
  const names = directories.map((dir) => JSON.stringify(dir)).join(", ");
  console.error(`gjc-session-store: made ${names} owner-only (mode 0700, no ACL): managed session storage keeps its directories private`);
}

/**
 * The managed scope of `cwd` below `agentDir`, prepared for writing. Managed storage keeps its chain owner-only, so a
 * looser agent directory or sessions root (pi makes them 0755) is made 0700 here: never silently, each such directory
 * goes once per process to `report` (default: a line on stderr). pi's own session folders are not on that chain.
 * @throws ScopeError with the resolution's code (`cwd_missing`, ...)
 */
export function preparedScope(cwd: string, agentDir: string, report: TightenedReport = printTightened): ManagedScope {
  const result = resolveManagedScope({ cwd, agentDir, mode: "write" });
  if (result.kind === "error") throw new ScopeError(result);
  const fresh = result.scope.repaired.filter((dir) => !reported.has(dir));
  for (const dir of fresh) reported.add(dir);
  if (fresh.length > 0) report(fresh);
  return result.scope;
}

/** The candidate listing of `scope`, or its failure thrown. @throws MigrationError */
function candidatesOf(scope: ManagedScope): SessionCandidate[] {
  const listing = listSessionCandidatesSync(scope);
  if (listing.kind === "error") throw new MigrationError(listing.code, listing.cause, listing.message);
  return listing.candidates;
}

/** A session `continueRecent` may resume, and how to get the file to write for it (`undefined`: nothing to resume there). */
export interface ResumeChoice {
  readonly path: string;
  readonly writable: () => string | undefined;
}

/**
 * What `continueRecent` may resume in `scope`, newest modification first, found by stat and header alone (resuming must
 * not hash a workspace's every session): its v2 files, then at equal times pi's files that name this workspace. Only a
 * pi file chosen is looked up among the workspace's candidates (once), and copied unless an earlier run did.
 */
export function resumeChoices(scope: ManagedScope, agentDir: string): ResumeChoice[] {
  const v2 = recentSessions(scope.directoryPath, { agentDir })
    .filter((file) => file.usable())
    .map((file) => ({ path: file.path, mtimeMs: file.mtimeMs, rank: 0, writable: () => file.path }));
  const owners = new Map<string, boolean>();
  const ours = (cwd: string): boolean => {
    let mine = owners.get(cwd);
    if (mine === undefined) {
      const owner = workspaceIdentity(cwd);
      mine = owner.kind === "identity" && owner.identity.platform === scope.platform && owner.identity.canonicalPath === scope.canonicalCwd;
      owners.set(cwd, mine);
    }
    return mine;
  };
  let candidates: SessionCandidate[] | undefined;
  const legacy = listLegacySessionFiles(agentDir)
    .filter((file) => file.cwd !== undefined && ours(file.cwd))
    .map((file) => ({
      path: file.path,
      mtimeMs: file.mtimeMs,
      rank: 1,
      writable: () => {
        candidates ??= candidatesOf(scope);
        // Retired, or no longer the version on disk: nothing to resume there.
        const candidate = candidates.find((c) => c.path === file.path || c.migratedFrom === file.path);
        return candidate === undefined ? undefined : writableFile(scope, candidate);
      },
    }));
  return [...v2, ...legacy].sort((a, b) => b.mtimeMs - a.mtimeMs || a.rank - b.rank);
}

/** pi's sessions of `cwd`'s workspace not copied yet (read only; none when its scope cannot be resolved). */
export function uncopiedSessions(cwd: string, agentDir: string): SessionCandidate[] {
  const result = resolveManagedScope({ cwd, agentDir, mode: "sources" });
  return result.kind === "error" ? [] : uncopiedOf(result.scope);
}

/** The legacy candidates of `scope` (none when it cannot be listed). */
function uncopiedOf(scope: ManagedScope): SessionCandidate[] {
  const listing = listSessionCandidatesSync(scope);
  return listing.kind === "error" ? [] : listing.candidates.filter((c) => c.provenance === "legacy");
}

/** The v2 file to write for `candidate`: itself, or its copy (made now, or by an earlier run). @throws MigrationError */
function writableFile(scope: ManagedScope, candidate: SessionCandidate): string {
  if (candidate.provenance === "v2") return candidate.path;
  const result = openCandidateForWriteSync(scope, candidate);
  if (result.kind === "error") throw new MigrationError(result.code, result.cause, result.message);
  return result.path;
}

/** Whether `dir` is a folder an older layout made in `agentDir`'s sessions root (neither a scope nor internal). */
export function isLegacyFolder(dir: string, agentDir: string): boolean {
  if (!isLegacyFolderName(path.basename(dir))) return false;
  const parent = path.dirname(dir);
  return [agentDir, canonicalizeTrustedPath(agentDir)].some((root) => parent === path.join(root, SESSIONS_DIRECTORY));
}

/** The header of a session file read as it is (no owner-only rule: pi's own files are 0644), or `undefined`. */
export function headerOf(file: string): SessionHeader | undefined {
  return readSessionRecords(file)[0] as SessionHeader | undefined;
}

/**
 * For a file in a legacy folder of `agentDir`: the v2 file to write instead, its copy made now (or found, when an
 * earlier run made it). `undefined` for any other file; a legacy file that cannot be copied is refused, never opened in place. @throws ScopeError (`cwd_missing` for a deleted workspace); MigrationError
 */
export function copyOfLegacyFile(file: string, agentDir: string, report?: TightenedReport): string | undefined {
  if (!isLegacyFolder(path.dirname(file), agentDir)) return undefined;
  const cwd = headerOf(file)?.cwd;
  if (typeof cwd !== "string" || cwd.length === 0) throw new MigrationError("not_a_candidate", "no_cwd", "the legacy session's header names no workspace");
  const scope = preparedScope(cwd, agentDir, report);
  const inRoot = path.join(scope.sessionsRoot, path.basename(path.dirname(file)), path.basename(file));
  const candidate = candidatesOf(scope).find((c) => c.path === inRoot || c.migratedFrom === inRoot);
  // Written in place it would no longer be pi's: a file of a legacy folder is only ever copied.
  if (candidate === undefined)
    throw new MigrationError("not_a_candidate", "not_listed", "the legacy session is not one of its workspace's sessions (retired, or changed since)");
  return writableFile(scope, candidate);
}

/**
 * Every session file pi wrote in a legacy folder of `agentDir` and that was not copied yet, with its mtime: each
 * workspace's own listing says which are copied; those of a workspace that no longer exists are all kept. Never writes.
 */
export function uncopiedLegacyFiles(agentDir: string): { path: string; mtimeMs: number }[] {
  const uncopied = new Map<string, Set<string> | undefined>();
  return listLegacySessionFiles(agentDir).filter(({ path: file, cwd }) => {
    if (cwd === undefined || cwd.length === 0) return false;
    if (!uncopied.has(cwd)) {
      const resolved = resolveManagedScope({ cwd, agentDir });
      uncopied.set(cwd, resolved.kind === "error" ? undefined : new Set(uncopiedOf(resolved.scope).map((c) => c.path)));
    }
    const paths = uncopied.get(cwd);
    return paths === undefined || paths.has(file);
  });
}
