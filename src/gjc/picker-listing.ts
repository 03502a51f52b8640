/**
 * The resume picker's listings, which never write (no listing index, no recovery): a session
 * directory's sessions, or a workspace's managed scope, its legacy sessions not copied yet (see
 * `legacy-resume.ts`), plus the transcripts a project keeps under
 * `<cwd>/.gjc/` (directly there, in an `agent-session` folder, or below a `sessions` folder),
 * merged by session id (the newest row wins) and newest first. Files directly inside a `.staging`
 * folder are attempts, not sessions, and are never listed.
 */
import fs from "node:fs";
import path from "node:path";

import { SessionManager as Engine } from "../manager/session-manager.js";
import type { SessionInfo as EngineSessionInfo } from "../manager/session-info.js";
import { listSessions } from "../manager/discovery.js";
import { FileSessionStorage, type SessionStorage } from "../storage/index.js";
import { legacyPickerRows } from "./legacy-resume.js";

/** The project scan stops after this many directories, or this many transcripts. */
const PROJECT_SCAN_MAX_DIRECTORIES = 4096;
const PROJECT_SCAN_MAX_FILES = 1000;

const READ_ONLY = { persistentIndex: false } as const;

/** A listing row as GJC's app receives it: the engine's row, plus GJC's name for the header's `parentSession`. */
export interface SessionInfo extends EngineSessionInfo {
  /** The header's `parentSession` (the session this one was branched or forked from), under GJC's name. */
  readonly parentSessionPath?: string;
}

/** `rows` with GJC's `parentSessionPath` beside the engine's `parentSession`. */
export function gjcRows(rows: readonly EngineSessionInfo[]): SessionInfo[] {
  return rows.map((row) => (row.parentSession === undefined ? row : { ...row, parentSessionPath: row.parentSession }));
}

/** The directories below `<cwd>/.gjc` holding project transcripts, each with the names of those transcripts (links never followed). */
function projectTranscriptDirs(cwd: string): Map<string, Set<string>> {
  const found = new Map<string, Set<string>>();
  const root = path.join(cwd, ".gjc");
  const queue: { dir: string; inSessions: boolean }[] = [{ dir: root, inSessions: false }];
  let directories = 0;
  let files = 0;
  while (queue.length > 0 && directories < PROJECT_SCAN_MAX_DIRECTORIES && files < PROJECT_SCAN_MAX_FILES) {
    const { dir, inSessions } = queue.shift()!;
    directories += 1;
    let entries: fs.Dirent[];
    try {
      entries = fs.readdirSync(dir, { withFileTypes: true });
    } catch {
      continue;
    }
    const name = path.basename(dir);
    const holdsTranscripts = dir === root || name === "agent-session" || inSessions;
    for (const entry of entries.sort((a, b) => (a.name < b.name ? -1 : 1))) {
      if (entry.name.startsWith(".")) continue;
      if (entry.isDirectory()) queue.push({ dir: path.join(dir, entry.name), inSessions: inSessions || entry.name === "sessions" });
      else if (entry.isFile() && holdsTranscripts && entry.name.endsWith(".jsonl") && files < PROJECT_SCAN_MAX_FILES) {
        files += 1;
        const names = found.get(dir) ?? new Set<string>();
        names.add(entry.name);
        found.set(dir, names);
      }
    }
  }
  return found;
}

/** Rows merged by session id, the newest `modified` kept, newest first. */
function mergedById(rows: readonly EngineSessionInfo[]): SessionInfo[] {
  const byId = new Map<string, EngineSessionInfo>();
  for (const row of rows) {
    const kept = byId.get(row.id);
    if (kept === undefined || row.modified.getTime() > kept.modified.getTime()) byId.set(row.id, row);
  }
  return gjcRows([...byId.values()].sort((a, b) => b.modified.getTime() - a.modified.getTime()));
}

/** Whether `file` sits directly in a `.staging` folder (an attempt, not a session). */
function isStaged(file: string): boolean {
  return path.basename(path.dirname(file)) === ".staging";
}

/** The managed scope's sessions of `cwd` and the project's own transcripts; `[]` for another storage or an unusable scope. */
export async function listManagedForPicker(cwd: string, managedAgentDir?: string, storage?: SessionStorage): Promise<SessionInfo[]> {
  if (storage !== undefined && !(storage instanceof FileSessionStorage)) return [];
  let managed: EngineSessionInfo[];
  try {
    managed = await Engine.list(cwd, undefined, undefined, { ...READ_ONLY, ...(managedAgentDir === undefined ? {} : { agentDir: managedAgentDir }) });
  } catch {
    return [];
  }
  const project: EngineSessionInfo[] = [];
  for (const [dir, names] of projectTranscriptDirs(path.resolve(cwd))) {
    try {
      const listing = await listSessions(dir, { ...READ_ONLY, cache: false });
      project.push(...listing.sessions.filter((row) => names.has(path.basename(row.path))));
    } catch {
      // A project folder that cannot be listed safely has no sessions to offer.
    }
  }
  return mergedById([...managed, ...legacyPickerRows(cwd, managedAgentDir), ...project].filter((row) => !isStaged(row.path)));
}

/** The sessions of `sessionDir`, or without one {@link listManagedForPicker}; any failure lists as `[]`. */
export async function listForPicker(cwd: string, sessionDir?: string, storage?: SessionStorage): Promise<SessionInfo[]> {
  if (sessionDir === undefined) return listManagedForPicker(cwd, undefined, storage);
  try {
    return gjcRows(await Engine.list(cwd, path.resolve(sessionDir), storage, READ_ONLY));
  } catch {
    return [];
  }
}
