/**
 * A workspace's legacy sessions (the `--<encoded cwd>--` folders an older layout left in the
 * sessions root) where GJC's resume reaches them: listed beside the managed scope's sessions for
 * the picker (read by the legacy-source rules, never changed), and, once one is chosen for a
 * managed destination, copied into the workspace's scope (copy-retain) before it is opened, so
 * that no legacy file is ever written in place. A migration policy of `disabled` refuses the copy.
 */
import path from "node:path";

import { SecureDir } from "../fs/index.js";
import { buildSessionInfo, summarizePrefix } from "../manager/session-info.js";
import { SESSION_LIST_PREFIX_BYTES, type SessionInfo } from "../manager/index.js";
import type { MigrationPolicy } from "../manager/destination.js";
import { DEFAULT_ARTIFACT_LIMITS } from "../migration/copy.js";
import { isLegacyFolderName, listLegacySessionFiles, listSessionCandidatesSync, openCandidateForWrite, type SessionCandidate } from "../migration/index.js";
import { canonicalizeTrustedPath, defaultAgentDir, resolveManagedScope, SESSIONS_DIRECTORY, workspaceIdentity, type ManagedScope } from "../scope/index.js";

/** The capacity refusal as GJC's app shows it: the migration's entry and byte budgets, in GJC's wording so its callers see the same text. */
const CAPACITY_MESSAGE = `Legacy session artifacts exceed the migration capacity (${DEFAULT_ARTIFACT_LIMITS.maxEntries.toLocaleString()} files or ${DEFAULT_ARTIFACT_LIMITS.maxTotalBytes / (1024 * 1024)} MiB).`;

/** Why a legacy session was not copied for a strict open (GJC's strict-open reasons), with a message where GJC gives one. */
export interface LegacyAdoptionFailure {
  kind: "error";
  reason: "legacy_migration_disabled" | "artifact_capacity_exceeded" | "migration_busy" | "identity-mismatch" | "migration-required";
  message?: string;
}

/** Whether `file` sits directly in a legacy folder of `agentDir`'s sessions root. */
export function isLegacySessionFile(file: string, agentDir: string | undefined): boolean {
  const folder = path.dirname(path.resolve(file));
  if (!isLegacyFolderName(path.basename(folder))) return false;
  const home = agentDir ?? defaultAgentDir();
  return [home, canonicalizeTrustedPath(home)].some((root) => path.dirname(folder) === path.join(root, SESSIONS_DIRECTORY));
}

/** The candidates of `cwd`'s workspace (read only, nothing prepared); none when its scope cannot be resolved or listed. */
function candidatesOf(cwd: string, agentDir: string | undefined): { scope: ManagedScope; candidates: SessionCandidate[] } | undefined {
  const resolved = resolveManagedScope({ cwd, ...(agentDir === undefined ? {} : { agentDir }), mode: "sources" });
  if (resolved.kind === "error") return undefined;
  const listing = listSessionCandidatesSync(resolved.scope);
  return listing.kind === "error" ? undefined : { scope: resolved.scope, candidates: listing.candidates };
}

/** The picker row of legacy candidate `candidate`, from the first bytes of its file read by the legacy-source rules; `undefined` when that no longer reads as a session. */
function rowOf(candidate: SessionCandidate): SessionInfo | undefined {
  let dir: SecureDir;
  try {
    dir = SecureDir.openRoot(path.dirname(candidate.path), { source: true });
  } catch {
    return undefined;
  }
  try {
    const file = dir.openFile(path.basename(candidate.path), { source: true });
    try {
      const { size, mtimeMs } = candidate.identity;
      const summary = summarizePrefix(file.readPrefix(SESSION_LIST_PREFIX_BYTES).toString("utf8"), size <= SESSION_LIST_PREFIX_BYTES);
      return summary.kind === "session" ? buildSessionInfo(candidate.path, summary, {}, { size, mtimeMs }, size > SESSION_LIST_PREFIX_BYTES) : undefined;
    } finally {
      file.close();
    }
  } catch {
    return undefined;
  } finally {
    dir.close();
  }
}

/**
 * Whether a legacy folder holds a file whose header names `cwd`'s workspace: headers only, so a workspace without legacy
 * sessions never pays for the candidate listing, which hashes every session of the workspace.
 */
function hasLegacyFiles(cwd: string, agentDir: string | undefined): boolean {
  const files = listLegacySessionFiles(agentDir ?? defaultAgentDir());
  if (files.length === 0) return false;
  const mine = workspaceIdentity(cwd);
  if (mine.kind !== "identity") return false;
  const verdicts = new Map<string, boolean>();
  return files.some(({ cwd: named }) => {
    if (named === undefined || named.length === 0) return false;
    let same = verdicts.get(named);
    if (same === undefined) {
      const theirs = workspaceIdentity(named);
      same = theirs.kind === "identity" && theirs.identity.platform === mine.identity.platform && theirs.identity.canonicalPath === mine.identity.canonicalPath;
      verdicts.set(named, same);
    }
    return same;
  });
}

/** The legacy sessions of `cwd`'s workspace not copied into its scope yet, as picker rows. Never writes. */
export function legacyPickerRows(cwd: string, agentDir: string | undefined): SessionInfo[] {
  if (!hasLegacyFiles(cwd, agentDir)) return [];
  const listed = candidatesOf(cwd, agentDir);
  if (listed === undefined) return [];
  return listed.candidates.filter((c) => c.provenance === "legacy").flatMap((c) => rowOf(c) ?? []);
}

/**
 * The v2 file to open for the legacy session `file` of workspace `cwd`, whose bytes were inspected as `sha256`: the copy an
 * earlier run made, or one made now (copy-retain; the source is only read). Refused: `disabled` policy, artifacts over the
 * migration limits, another process migrating it, a source no longer the inspected bytes, or a file that is not one of the
 * workspace's sessions.
 */
export async function adoptLegacySession(
  file: string,
  cwd: string,
  sha256: string,
  agentDir: string | undefined,
  policy: MigrationPolicy = "copy-retain",
): Promise<{ kind: "adopted"; path: string } | LegacyAdoptionFailure> {
  const listed = candidatesOf(cwd, agentDir);
  const absolute = path.resolve(file);
  const candidate = listed?.candidates.find((c) => c.path === absolute || c.migratedFrom === absolute);
  if (listed === undefined || candidate === undefined)
    return { kind: "error", reason: "migration-required", message: "The legacy session is not one of its workspace's sessions." };
  if (candidate.provenance === "v2") return { kind: "adopted", path: candidate.path };
  if (candidate.identity.sha256 !== sha256) return { kind: "error", reason: "identity-mismatch" };
  const result = await openCandidateForWrite(listed.scope, candidate, { directoryMigration: policy });
  if (result.kind === "opened") return { kind: "adopted", path: result.path };
  switch (result.code) {
    case "legacy_migration_disabled":
    case "migration_busy":
      return { kind: "error", reason: result.code };
    case "artifact_capacity_exceeded":
      return { kind: "error", reason: result.code, message: CAPACITY_MESSAGE };
    case "source_changed":
      return { kind: "error", reason: "identity-mismatch" };
    default:
      return { kind: "error", reason: "migration-required", message: result.message };
  }
}

/**
 * Where session `file` of workspace `cwd`, no longer at its path, went: the copy a migration recorded, else the one session
 * of the workspace's scope with the same file name (a copy keeps its name; two or more such are no answer). `undefined` when
 * neither is there.
 */
export function copiedLegacySession(file: string, cwd: string, agentDir: string | undefined): string | undefined {
  const absolute = path.resolve(file);
  const owned = candidatesOf(cwd, agentDir)?.candidates.filter((c) => c.provenance === "v2") ?? [];
  const recorded = owned.find((c) => c.migratedFrom === absolute);
  if (recorded !== undefined) return recorded.path;
  const named = owned.filter((c) => path.basename(c.path) === path.basename(absolute));
  return named.length === 1 ? named[0]!.path : undefined;
}
