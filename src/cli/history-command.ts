/** `history search` and `history recent`: the prompt history of the agent dir. */
import fs from "node:fs";
import path from "node:path";

import { HISTORY_DB_NAME, HistoryStorage, type HistoryEntry } from "../index.js";
import type { CliContext } from "./context.js";
import { CliError } from "./errors.js";
import { oneLine, shortTime, table } from "./output.js";

/** Options of the history commands. */
interface HistoryOptions {
  /** Limit to prompts typed in this directory; `true` means the current one. */
  readonly cwd?: string | boolean;
  readonly limit?: number;
  readonly json?: boolean;
}

function cwdFilter(option: HistoryOptions["cwd"]): string | undefined {
  if (option === undefined || option === false) return undefined;
  return option === true ? process.cwd() : path.resolve(option);
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
    throw new CliError("agent_dir_unusable", `cannot read ${ctx.agentDir}: ${code === "EACCES" || code === "EPERM" ? "permission_denied" : "read_failed"}`, { cause: error });
  }
}

// Reading commands never create the agent dir or an empty database: no file, no prompts.
function withHistory<T>(ctx: CliContext, fallback: T, use: (history: HistoryStorage) => T): T {
  const dbPath = path.join(ctx.agentDir, HISTORY_DB_NAME);
  if (!historyExists(ctx, dbPath)) return fallback;
  const history = HistoryStorage.open(dbPath, { createDir: false });
  try {
    return use(history);
  } finally {
    history.close();
  }
}

/** Prompts matching `query`, newest first. */
export function runHistorySearch(ctx: CliContext, query: string, options: HistoryOptions): number {
  const cwd = cwdFilter(options.cwd);
  const found = withHistory(ctx, [], (h) => h.search(query, options.limit ?? DEFAULT_SEARCH_LIMIT, cwd));
  print(ctx, found, options.json === true);
  return 0;
}

/** The newest prompts. */
export function runHistoryRecent(ctx: CliContext, options: HistoryOptions): number {
  const found = withHistory(ctx, [], (h) => h.getRecent(options.limit ?? DEFAULT_RECENT_LIMIT, cwdFilter(options.cwd)));
  print(ctx, found, options.json === true);
  return 0;
}

function print(ctx: CliContext, entries: readonly HistoryEntry[], json: boolean): void {
  if (json) {
    ctx.out(JSON.stringify(entries, null, 2));
    return;
  }
  if (entries.length === 0) {
    ctx.out(ctx.style.dim("no prompts"));
    return;
  }
  const rows = entries.map((e) => [shortTime(new Date(e.created_at * 1000)), ctx.style.dim(e.cwd ?? "-"), oneLine(e.prompt, 80)]);
  for (const line of table(rows)) ctx.out(line);
}
