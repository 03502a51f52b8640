/**
 * Which session `continueRecent` resumes, and the breadcrumb that lets the next start in the
 * same terminal find it again. Both go through the breadcrumb and discovery modules; this
 * file only decides when to call them.
 */
import path from "node:path";

import { resolveBreadcrumb, stdinTtyPath, terminalIdFromEnv, writeBreadcrumb } from "./breadcrumbs.js";
import { findMostRecentSession } from "./discovery.js";
import type { ResolvedOptions } from "./options.js";

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
 * The session file to resume for `cwd`: this terminal's breadcrumb when it names `cwd` and a
 * session file that still exists in the session directory, else the newest session there by
 * mtime; `undefined` when there is none.
 */
export async function findContinuation(options: ResolvedOptions, cwd: string): Promise<string | undefined> {
  const terminal = terminalOf(options);
  if (terminal !== undefined && options.agentDir !== undefined) {
    const crumb = await resolveBreadcrumb(options.agentDir, terminal, cwd, { sessionStorage: options.storage });
    // A breadcrumb naming a file elsewhere belongs to another session directory.
    if (crumb.kind === "resolved" && path.dirname(crumb.sessionFile) === options.sessionDir) return crumb.sessionFile;
  }
  return (await findMostRecentSession(options.sessionDir, options.storage)) ?? undefined;
}
