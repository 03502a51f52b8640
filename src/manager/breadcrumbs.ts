/**
 * Terminal breadcrumbs: `<agentDir>/terminal-sessions/<terminal-id>` remembers the session last used in a terminal (two lines:
 * `cwd`, session file), so `continueRecent()` there resumes it rather than whatever another window touched last. Written
 * atomically and owner-only, by descriptor from the held agent directory. A hint: writing never throws on I/O, and reading only
 * yields a session that still exists and belongs to the same working directory.
 */
import fs from "node:fs";
import path from "node:path";
import tty from "node:tty";

import { AgentRoot } from "../scope/agent-root.js";
import { ManagedSessionStorage, StorageError, type SessionStorage, type StorageErrorCode } from "../storage/index.js";
import { guardStorage, pathError } from "../storage/errors.js";

/** Directory below the agent directory that holds the breadcrumbs. */
export const TERMINAL_SESSIONS_DIR = "terminal-sessions";

/** Largest breadcrumb read; two paths never come close. */
export const BREADCRUMB_MAX_BYTES = 64 * 1024;

/** Which terminal facility named the terminal. */
type TerminalIdSource = "tmux" | "tty" | "kitty" | "apple-terminal" | "windows-terminal";

/** A terminal id for breadcrumbs, or why there is none. */
export type TerminalIdResult =
  | { kind: "terminal"; id: string; source: TerminalIdSource }
  /** `no_terminal`: nothing names a terminal; `unsafe_id`: the deciding value is no safe file name. */
  | { kind: "none"; reason: "no_terminal" | "unsafe_id" };

// Letters, digits and the punctuation terminal ids really use (`%` in tmux panes, `:` in
// Terminal.app session ids); never a separator, never a leading dot (hidden/temporary names).
const SAFE_ID = /^[A-Za-z0-9][A-Za-z0-9._%+@=:-]{0,199}$/;

/** True when `id` is a safe single file name here: 1..200 safe characters, no trailing dot, no `:` on Windows. */
export function isSafeTerminalId(id: string): boolean {
  if (typeof id !== "string" || !SAFE_ID.test(id) || id.endsWith(".")) return false;
  return process.platform !== "win32" || !id.includes(":");
}

/**
 * The terminal id from `env` and the stdin terminal `stdinTty` ({@link stdinTtyPath}). The first
 * source that applies decides: a tmux pane inside tmux (`tmux-<TMUX_PANE>`), the stdin device
 * (`/dev/pts/3` -> `pts-3`), kitty (`kitty-<KITTY_WINDOW_ID>`), a tmux pane without `TMUX`,
 * Terminal.app (`apple-<TERM_SESSION_ID>`), Windows Terminal (`wt-<WT_SESSION>`). An unsafe
 * deciding value gives `unsafe_id`, never a fallback to a weaker source.
 */
export function terminalIdFromEnv(env: NodeJS.ProcessEnv = process.env, stdinTty: string | undefined = undefined): TerminalIdResult {
  // A device path has plain segments; `..` or `.` would make two spellings of one terminal.
  const device = stdinTty?.startsWith("/dev/") === true && stdinTty.length > "/dev/".length ? stdinTty.slice("/dev/".length).split("/") : undefined;
  const plain = device?.every((segment) => segment !== "" && segment !== "." && segment !== "..") === true;
  const sources: [TerminalIdSource, string | undefined][] = [
    ["tmux", env.TMUX === undefined || env.TMUX.length === 0 ? undefined : prefixed("tmux", env.TMUX_PANE)],
    // A device path that is not plain still decides, as an unsafe id.
    ["tty", device === undefined ? undefined : plain ? device.join("-") : ""],
    ["kitty", prefixed("kitty", env.KITTY_WINDOW_ID)],
    ["tmux", prefixed("tmux", env.TMUX_PANE)],
    ["apple-terminal", prefixed("apple", env.TERM_SESSION_ID)],
    ["windows-terminal", prefixed("wt", env.WT_SESSION)],
  ];
  const found = sources.find((source): source is [TerminalIdSource, string] => source[1] !== undefined);
  if (found === undefined) return { kind: "none", reason: "no_terminal" };
  const [source, id] = found;
  return isSafeTerminalId(id) ? { kind: "terminal", id, source } : { kind: "none", reason: "unsafe_id" };
}

function prefixed(prefix: string, value: string | undefined): string | undefined {
  return value === undefined || value.length === 0 ? undefined : `${prefix}-${value}`;
}

/** The device path of the terminal on stdin (`/dev/pts/3`), or `undefined` (not a terminal, or not Linux). */
export function stdinTtyPath(): string | undefined {
  if (process.platform !== "linux" || !tty.isatty(0)) return undefined;
  try {
    const target = fs.readlinkSync("/proc/self/fd/0");
    return target.startsWith("/dev/") ? target : undefined;
  } catch {
    return undefined;
  }
}

/** Where breadcrumbs live: an agent directory (a path, or held as an {@link AgentRoot}), or a storage rooted at one. */
type BreadcrumbHome = string | AgentRoot | SessionStorage;

/** Why a breadcrumb was not written: an unsafe terminal id, a path two lines cannot carry (relative, or with a line break or NUL), or a storage failure (`storageCode` says how). */
type BreadcrumbWriteCode = "unsafe_terminal_id" | "unrepresentable_path" | "write_failed";

/** The outcome of {@link writeBreadcrumb}. */
export type BreadcrumbWriteResult = { ok: true; path: string } | { ok: false; code: BreadcrumbWriteCode; storageCode?: StorageErrorCode };

/** Records that terminal `terminalId` works on `sessionFile` in `cwd`: exactly `cwd + "\n" + sessionFile + "\n"`, replaced atomically (0600 in a 0700 directory); failures are returned, never thrown. */
export function writeBreadcrumb(home: BreadcrumbHome, terminalId: string, cwd: string, sessionFile: string): BreadcrumbWriteResult {
  if (!isSafeTerminalId(terminalId)) return { ok: false, code: "unsafe_terminal_id" };
  if (!representable(cwd) || !representable(sessionFile)) return { ok: false, code: "unrepresentable_path" };
  try {
    return withBreadcrumbs(home, true, (storage, dir) => {
      const file = path.join(dir, terminalId);
      storage.writeTextSync(file, `${cwd}\n${sessionFile}\n`);
      return { ok: true, path: file };
    });
  } catch (error) {
    return { ok: false, code: "write_failed", ...storageCodeOf(error) };
  }
}

function representable(value: string): boolean {
  return typeof value === "string" && path.isAbsolute(value) && !/[\n\r\0]/.test(value);
}

/** Why a breadcrumb yielded nothing: an unsafe terminal id, none for this terminal, not two absolute paths each ending in a line feed (or too large), or the storage refused the read (`storageCode` says how). */
type BreadcrumbMissReason = "unsafe_terminal_id" | "missing" | "malformed" | "unreadable";

/** The outcome of {@link readBreadcrumb}. */
export type BreadcrumbReadResult =
  { kind: "found"; cwd: string; sessionFile: string } | { kind: "none"; reason: BreadcrumbMissReason; storageCode?: StorageErrorCode };

/** Reads the breadcrumb of `terminalId`. Never throws on I/O or bad content. */
export async function readBreadcrumb(home: BreadcrumbHome, terminalId: string): Promise<BreadcrumbReadResult> {
  if (!isSafeTerminalId(terminalId)) return { kind: "none", reason: "unsafe_terminal_id" };
  let text: string;
  try {
    text = await withBreadcrumbs(home, false, (storage, dir) => storage.readTextPrefix(path.join(dir, terminalId), BREADCRUMB_MAX_BYTES + 1));
  } catch (error) {
    if (error instanceof StorageError && error.code === "not_found") return { kind: "none", reason: "missing" };
    return { kind: "none", reason: "unreadable", ...storageCodeOf(error) };
  }
  const parsed = parseBreadcrumb(text);
  return parsed === undefined ? { kind: "none", reason: "malformed" } : { kind: "found", ...parsed };
}

function parseBreadcrumb(text: string): { cwd: string; sessionFile: string } | undefined {
  if (Buffer.byteLength(text, "utf8") > BREADCRUMB_MAX_BYTES || !text.endsWith("\n")) return undefined;
  const lines = text.slice(0, -1).split("\n");
  if (lines.length !== 2) return undefined;
  const [cwd, sessionFile] = lines as [string, string];
  return representable(cwd) && representable(sessionFile) ? { cwd, sessionFile } : undefined;
}

/** Options of {@link resolveBreadcrumb}. */
export interface ResolveBreadcrumbOptions {
  /** Storage that holds the session file, to check it still exists (links refused); default a no-follow lstat. */
  sessionStorage?: SessionStorage;
}

/** The outcome of {@link resolveBreadcrumb}. */
export type BreadcrumbResolution =
  | { kind: "resolved"; cwd: string; sessionFile: string }
  | {
      kind: "ignored";
      /** a read miss, or: `cwd_mismatch` (another working directory), `session_missing` (gone, or not a regular file) */
      reason: BreadcrumbMissReason | "cwd_mismatch" | "session_missing";
      storageCode?: StorageErrorCode;
    };

/** The session this terminal last used, if it may be resumed from `cwd`: the breadcrumb's cwd resolves to the same path, and the session file is still a regular file (not a link). */
export async function resolveBreadcrumb(
  home: BreadcrumbHome,
  terminalId: string,
  cwd: string,
  options: ResolveBreadcrumbOptions = {},
): Promise<BreadcrumbResolution> {
  const read = await readBreadcrumb(home, terminalId);
  if (read.kind === "none") return { ...read, kind: "ignored" };
  if (path.resolve(read.cwd) !== path.resolve(cwd)) return { kind: "ignored", reason: "cwd_mismatch" };
  if (!sessionFileExists(read.sessionFile, options.sessionStorage)) return { kind: "ignored", reason: "session_missing" };
  return { kind: "resolved", cwd: read.cwd, sessionFile: read.sessionFile };
}

function sessionFileExists(file: string, storage: SessionStorage | undefined): boolean {
  try {
    if (storage !== undefined) return storage.statSync(file).kind === "file";
    return fs.lstatSync(file).isFile();
  } catch {
    return false;
  }
}

/**
 * Runs `use` with a storage holding the breadcrumb directory, and its path. From an agent directory, `terminal-sessions/` is opened
 * by descriptor (created owner-only for a write; anything there but the user's own directory is refused); a storage home is used as given.
 */
function withBreadcrumbs<T>(home: BreadcrumbHome, write: boolean, use: (storage: SessionStorage, dir: string) => T): T {
  if (typeof home !== "string" && !(home instanceof AgentRoot)) {
    const dir = path.join(home.root, TERMINAL_SESSIONS_DIR);
    if (write) home.ensureDirSync(dir);
    return use(home, dir);
  }
  if (typeof home === "string" && !path.isAbsolute(home)) throw pathError("invalid_path", home);
  const where = path.join(typeof home === "string" ? path.resolve(home) : home.path, TERMINAL_SESSIONS_DIR);
  const direction = write ? "write" : "read";
  const root =
    typeof home === "string" ? guardStorage(direction, where, () => (write ? AgentRoot.open(home, { write: true }) : AgentRoot.openIfExists(home))) : home;
  if (root === undefined) throw pathError("not_found", where);
  try {
    const dir = guardStorage(direction, path.join(root.path, TERMINAL_SESSIONS_DIR), () => root.openDir(TERMINAL_SESSIONS_DIR));
    const storage = new ManagedSessionStorage(dir);
    try {
      const result = use(storage, dir.path);
      // An async use (a read) keeps the directory open until it settles.
      if (result instanceof Promise) return result.finally(() => storage.close()) as T;
      storage.close();
      return result;
    } catch (error) {
      storage.close();
      throw error;
    }
  } finally {
    if (root !== home) root.close();
  }
}

function storageCodeOf(error: unknown): { storageCode?: StorageErrorCode } {
  return error instanceof StorageError ? { storageCode: error.code } : {};
}
