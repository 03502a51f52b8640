/**
 * Which session `continueRecent` resumes, and the breadcrumb that lets the next start in the
 * same terminal find it again. Both go through the breadcrumb and discovery modules; this
 * file only decides when to call them.
 */
import path from "node:path";

import { resolveBreadcrumb, stdinTtyPath, terminalIdFromEnv, writeBreadcrumb } from "./breadcrumbs.js";
import { listRecentSessions } from "./discovery.js";
import type { ResolvedOptions } from "./options.js";
import type { SkippedSession } from "./session-info.js";
import { resumeSkipOf } from "./skip-codes.js";

/** The terminal id breadcrumbs use: the configured one, else detected; `undefined` for none. */
function terminalOf(options: ResolvedOptions): string | undefined {
  if (options.agentDir === undefined || options.terminalId === null) return undefined;
  if (options.terminalId !== undefined) return options.terminalId;
  const detected = terminalIdFromEnv(process.env, stdinTtyPath());
  return detected.kind === "terminal" ? detected.id : undefined;
}

/**
 * Records that this terminal is writing `file` in `cwd`. Best effort: the breadcrumb module
 * returns failures instead of throwing, and a failed breadcrumb never affects the session.
 */
export function announceSession(options: ResolvedOptions, file: string, cwd: string | undefined): void {
  const terminal = terminalOf(options);
  if (terminal === undefined || cwd === undefined || options.agentDir === undefined) return;
  writeBreadcrumb(options.agentDir, terminal, cwd, file);
}

/**
 * The session files `continueRecent` may resume for `cwd`, best first: this terminal's
 * breadcrumb when it names `cwd` and a session file that still exists in the session
 * directory, then every listed session newest first by mtime. Files the listing leaves out
 * (unreadable, refused by the owner-only rules, ...) are added to `skipped` as they are met, so
 * the caller can say why it passed over a newer file. The listing is read in growing batches:
 * the common case (the newest is free) reads one file.
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
    for (const skip of listing.skipped) {
      if (reported.has(skip.path)) continue;
      reported.add(skip.path);
      skipped.push(skip);
    }
    for (const session of listing.sessions) {
      if (seen.has(session.path)) continue;
      seen.add(session.path);
      yield session.path;
    }
    if (listing.sessions.length < limit) return;
  }
}

/**
 * Opens the first of the {@link candidates} that opens: one another writer holds, or that is
 * refused as a listing would refuse it, is passed over and reported in `skipped` (with every
 * file the listing left out on the way); any other failure is thrown.
 * @returns `opened` undefined when no candidate opened (the caller starts a new session)
 */
export async function openFirstFree<T>(options: ResolvedOptions, cwd: string, open: (file: string) => T): Promise<{ opened: T | undefined; skipped: SkippedSession[] }> {
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
