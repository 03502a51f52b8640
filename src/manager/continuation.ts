/** Which session `continueRecent` resumes, and the breadcrumb that lets the next start in the terminal find it. */
import path from "node:path";

import { resolveBreadcrumb, stdinTtyPath, terminalIdFromEnv, writeBreadcrumb } from "./breadcrumbs.js";
import { listRecentSessions } from "./discovery.js";
import type { ResolvedOptions } from "./options.js";
import { resumeSkipOf, type SkippedSession } from "./session-info.js";

/** The terminal id breadcrumbs use: the configured one, else detected; `undefined` for none. */
function terminalOf(options: ResolvedOptions): string | undefined {
  if (options.agentDir === undefined || options.terminalId === null) return undefined;
  if (options.terminalId !== undefined) return options.terminalId;
  const detected = terminalIdFromEnv(process.env, stdinTtyPath());
  return detected.kind === "terminal" ? detected.id : undefined;
}

/** Records that this terminal is writing `file` in `cwd` (best effort: a failed breadcrumb never costs the session). */
export function announceSession(options: ResolvedOptions, file: string, cwd: string | undefined): void {
  const terminal = terminalOf(options);
  if (terminal === undefined || cwd === undefined || options.agentDir === undefined) return;
  writeBreadcrumb(options.agentDir, terminal, cwd, file);
}

/** Whether `key` was not in `set` until now (it is added). */
function addedNow(set: Set<string>, key: string): boolean {
  return set.size < set.add(key).size;
}

/**
 * The files `continueRecent` may resume for `cwd`, best first: this terminal's breadcrumb when it names `cwd` and a file of this
 * directory, then every listed session newest first (growing batches: a free newest file reads one); skips go to `skipped` as met.
 */
async function* candidates(options: ResolvedOptions, cwd: string, skipped: SkippedSession[]): AsyncGenerator<string> {
  const seen = new Set<string>();
  const terminal = terminalOf(options);
  if (terminal !== undefined && options.agentDir !== undefined) {
    const crumb = await resolveBreadcrumb(options.agentDir, terminal, cwd, { sessionStorage: options.storage });
    // A breadcrumb naming a file elsewhere belongs to another session directory.
    if (crumb.kind === "resolved" && path.dirname(crumb.sessionFile) === options.sessionDir) {
      seen.add(crumb.sessionFile);
      yield crumb.sessionFile;
    }
  }
  const reported = new Set<string>();
  for (let limit = 1; ; limit *= 2) {
    const listing = await listRecentSessions(options.sessionDir, limit, { storage: options.storage });
    for (const skip of listing.skipped) if (addedNow(reported, skip.path)) skipped.push(skip);
    for (const session of listing.sessions) if (addedNow(seen, session.path)) yield session.path;
    if (listing.sessions.length < limit) return;
  }
}

/** Opens the first {@link candidates} that opens; one busy, or refused as a listing would, goes to `skipped`, any other failure is thrown. @returns `opened` undefined for none */
export async function openFirstFree<T>(
  options: ResolvedOptions,
  cwd: string,
  open: (file: string) => T,
): Promise<{ opened: T | undefined; skipped: SkippedSession[] }> {
  const skipped: SkippedSession[] = [];
  for await (const file of candidates(options, cwd, skipped)) {
    try {
      return { opened: open(file), skipped };
    } catch (error) {
      const skip = resumeSkipOf(file, error);
      if (skip === undefined) throw error;
      skipped.push(skip);
    }
  }
  return { opened: undefined, skipped };
}
