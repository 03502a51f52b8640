/** Argument rules of HistoryStorage; every violation is a `history_invalid_argument`. */
import path from "node:path";

import { defaultAgentDir } from "../scope/agent-dir.js";
import { HistoryError } from "./errors.js";
import { HISTORY_DB_NAME } from "./owner-only.js";
import { storableText } from "./query.js";

/** Largest `limit` honoured by `search` and `getRecent`; bigger requests are capped here. */
export const MAX_RESULT_LIMIT = 1000;

/** A `history_invalid_argument` error with `message`. */
export function invalid(message: string): HistoryError {
  return new HistoryError("history_invalid_argument", `history: ${message}`);
}

/** Refuses an options argument that is not an object. */
export function checkOptions(options: unknown): void {
  if (typeof options !== "object" || options === null) throw invalid("options must be an object");
}

/** The storable form of an optional cwd (null when absent); refuses empty, NUL or non-string. */
export function checkCwd(cwd: unknown): string | null {
  if (cwd === undefined || cwd === null) return null;
  if (typeof cwd !== "string" || cwd === "" || cwd.includes("\0")) throw invalid("cwd must be a non-empty string without NUL");
  return storableText(cwd);
}

/** The peer's rule: floored and clamped to 0..{@link MAX_RESULT_LIMIT}; only a non-number is refused. */
export function checkLimit(limit: unknown): number {
  if (typeof limit !== "number" || Number.isNaN(limit)) throw invalid("limit must be a number");
  return Math.min(Math.max(Math.floor(limit), 0), MAX_RESULT_LIMIT);
}

/** A non-negative integer option, or `fallback` when absent. */
export function checkPositiveInteger(value: unknown, name: string, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 0) throw invalid(`${name} must be a non-negative integer`);
  return value;
}

/** `<default agent dir>/history.db`, the peer's default location. */
export function defaultHistoryDbPath(): string {
  return path.join(defaultAgentDir(), HISTORY_DB_NAME);
}

/** The absolute database path, or `history_invalid_argument`. */
export function checkDbPath(dbPath: unknown): string {
  if (typeof dbPath !== "string" || dbPath === "" || dbPath.includes("\0")) throw invalid("dbPath must be a non-empty path without NUL");
  return path.resolve(dbPath);
}

/** The `history_instance_conflict` error for opening `asked` while `open` is open. */
export function conflict(open: string, asked: string): HistoryError {
  return new HistoryError("history_instance_conflict", `history: ${open} is open in this process; resetInstance() before opening ${asked}`);
}
