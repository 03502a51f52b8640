/** `history search` and `history recent`: the prompt history of the agent dir. */
import fs from "node:fs";
import path from "node:path";

import { HISTORY_DB_NAME, HistoryStorage, type HistoryEntry } from "../index.js";
import type { CliContext } from "./context.js";
import { CliError } from "./errors.js";
import { oneLine, shortTime, table } from "./output.js";

/** Options of the history commands; `cwd` limits to prompts typed in that directory (`true`: the current one). */
export interface HistoryOptions {
  readonly cwd?: string | boolean;
  readonly limit?: number;
  readonly json?: boolean;
}

/** Results shown when `--limit` is not given: `search` and `recent`. */
const DEFAULT_SEARCH_LIMIT = 100;
const DEFAULT_RECENT_LIMIT = 20;

/** Whether the history database exists; a failure other than missing is `agent_dir_unusable`, never "no prompts". */
function historyExists(ctx: CliContext, dbPath: string): boolean {
  try {
    fs.lstatSync(dbPath);
    return true;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ENOTDIR") return false;
    throw new CliError("agent_dir_unusable", `cannot read ${ctx.agentDir}: ${code === "EACCES" || code === "EPERM" ? "permission_denied" : "read_failed"}`, {
      cause: error,
    });
  }
}

/** A prompt as `--json` prints it: times are ISO 8601 in every JSON output of the CLI (the store keeps epoch seconds). */
function jsonRow(entry: HistoryEntry): { id: number; prompt: string; created: string; cwd?: string } {
  const row = { id: entry.id, prompt: entry.prompt, created: new Date(entry.created_at * 1000).toISOString() };
  return entry.cwd === undefined ? row : { ...row, cwd: entry.cwd };
}

/** Prompts matching `query` (`history search`), or without one the newest (`history recent`), newest first. */
export function runHistory(ctx: CliContext, query: string | undefined, options: HistoryOptions): number {
  const cwd = options.cwd === undefined || options.cwd === false ? undefined : options.cwd === true ? process.cwd() : path.resolve(options.cwd);
  // Reading commands never create the agent dir or an empty database: no file, no prompts.
  const dbPath = path.join(ctx.agentDir, HISTORY_DB_NAME);
  let found: HistoryEntry[] = [];
  if (historyExists(ctx, dbPath)) {
    const history = HistoryStorage.open(dbPath, { createDir: false });
    try {
      found =
        query === undefined ? history.getRecent(options.limit ?? DEFAULT_RECENT_LIMIT, cwd) : history.search(query, options.limit ?? DEFAULT_SEARCH_LIMIT, cwd);
    } finally {
      history.close();
    }
  }
  if (options.json === true) ctx.json(found.map(jsonRow));
  else if (found.length === 0) ctx.out(ctx.style.dim("no prompts"));
  else
    for (const line of table(found.map((e) => [shortTime(new Date(e.created_at * 1000)), ctx.style.dim(e.cwd ?? "-"), oneLine(e.prompt, 80)]))) ctx.out(line);
  return 0;
}
