/**
 * GJC's `getRecentSessions`: the newest sessions of a directory as rows its welcome screen shows,
 * each with a display `name` and a relative `timeAgo`, beside our {@link SessionInfo} fields.
 */
import { getRecentSessions as listRecent, NO_MESSAGES, type DiscoveryOptions, type SessionInfo } from "../manager/index.js";
import { sanitizeSessionTitle } from "../manager/title.js";
import { engineStorage, type FaceSessionStorage } from "./storage-view.js";

/** How many rows GJC's welcome screen asks for. */
export const DEFAULT_RECENT_SESSION_LIMIT = 20;

/** One row of {@link getRecentSessions}: a {@link SessionInfo} with GJC's display fields. */
export interface RecentSessionInfo extends SessionInfo {
  /** The first line of the title, else of the first user message, else `Untitled · HH:MM` (when it was created); not cut to a picker width (the renderer fits it), only to a stored title's 1,000 characters. */
  readonly fullName: string;
  /** The same as {@link fullName}: what GJC's welcome screen shows. */
  readonly name: string;
  /** The file's modification time in milliseconds since the epoch. */
  readonly mtime: number;
  /** How long ago the file changed, when the row was made: `just now`, `5m ago`, `3h ago`, `2d ago`, else the local date. */
  readonly timeAgo: string;
}

/**
 * The `limit` newest sessions of `sessionDir` (by modification time), as {@link RecentSessionInfo} rows.
 * @throws SessionManagerError `invalid_options` for a negative or fractional limit; StorageError for a bad directory path
 */
export async function getRecentSessions(
  sessionDir: string,
  limit = DEFAULT_RECENT_SESSION_LIMIT,
  storage?: FaceSessionStorage,
  options: Omit<DiscoveryOptions, "storage"> = {},
): Promise<RecentSessionInfo[]> {
  const now = Date.now();
  return (await listRecent(sessionDir, limit, engineStorage(storage), options)).map((info) => recentRow(info, now));
}

/** `info` with GJC's display fields, its age taken against `now` (ms since the epoch). */
export function recentRow(info: SessionInfo, now: number): RecentSessionInfo {
  const fullName = nameOf(info);
  return { ...info, fullName, name: fullName, mtime: info.modified.getTime(), timeAgo: timeAgo(info.modified, now) };
}

/** GJC's rule: the first line of the title, else of the first user message, else the engine's `Untitled` label. */
function nameOf(info: SessionInfo): string {
  const title = info.title === undefined ? "" : firstLine(info.title);
  if (title !== "") return title;
  const first = info.firstMessage === NO_MESSAGES ? "" : firstLine(info.firstMessage);
  return first !== "" ? first : info.displayName;
}

function firstLine(text: string): string {
  return sanitizeSessionTitle(text.split(/\r?\n/, 1)[0] ?? "");
}

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/** GJC's relative time: minutes under an hour, hours under a day, days under a week, then the date. */
export function timeAgo(when: Date, now: number): string {
  const elapsed = now - when.getTime();
  if (elapsed < MINUTE) return "just now";
  if (elapsed < HOUR) return `${Math.floor(elapsed / MINUTE)}m ago`;
  if (elapsed < DAY) return `${Math.floor(elapsed / HOUR)}h ago`;
  if (elapsed < 7 * DAY) return `${Math.floor(elapsed / DAY)}d ago`;
  return when.toLocaleDateString();
}
