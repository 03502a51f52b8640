/** Terminal output of the CLI: colour only on a TTY without `NO_COLOR`, aligned columns, one-line errors, every line sanitized. */
import { randomBytes } from "node:crypto";

import { GjcError } from "../index.js";
import { printable } from "./printable.js";

/** The SGR codes (set, reset) of each style. */
const STYLES = { bold: [1, 22], dim: [2, 22], red: [31, 39], yellow: [33, 39], green: [32, 39], cyan: [36, 39] } as const;

/** Styling functions; each returns its text unchanged when colour is off. */
export type Style = { readonly enabled: boolean } & { readonly [K in keyof typeof STYLES]: (text: string) => string };

// A style does not put its escape sequence into the line: it puts a marker carrying a random nonce drawn when the
// process starts and never printed, which `terminalLine` turns into the sequence after sanitizing everything else.
// Nothing in a session, an argument or the environment can spell the marker, so the only escape sequences that
// reach a terminal are the styles'.
const MARK = `\u0000${randomBytes(12).toString("hex")}:`;
const MARKS = new RegExp(`${MARK}(\\d+);`, "g");

/** The style of `stream`: colour only on a terminal with `NO_COLOR` unset or empty (https://no-color.org). */
export function styleFor(stream: { isTTY?: boolean }, env: NodeJS.ProcessEnv = process.env): Style {
  const enabled = stream.isTTY === true && (env.NO_COLOR === undefined || env.NO_COLOR === "");
  const styles = Object.entries(STYLES).map(([name, [open, close]]) => [name, (text: string) => (enabled ? `${MARK}${open};${text}${MARK}${close};` : text)]);
  return { enabled, ...Object.fromEntries(styles) } as Style;
}

/**
 * One line as it goes to a terminal or pipe: every character of its text through {@link printable} (a newline inside
 * is content, never layout), each style marker as its SGR sequence.
 */
export function terminalLine(line: string): string {
  let out = "";
  let last = 0;
  for (const match of line.matchAll(MARKS)) {
    out += `${printable(line.slice(last, match.index))}\u001b[${match[1] as string}m`;
    last = match.index + match[0].length;
  }
  return out + printable(line.slice(last));
}

/** Display width of `text` as {@link terminalLine} writes it, ignoring styles. */
function visibleWidth(text: string): number {
  return [...printable(text.replace(MARKS, ""))].length;
}

/** Rows as aligned columns two spaces apart; the last column is never padded. */
export function table(rows: readonly (readonly string[])[]): string[] {
  const widths: number[] = [];
  for (const row of rows) row.forEach((cell, i) => (widths[i] = Math.max(widths[i] ?? 0, visibleWidth(cell))));
  return rows.map((row) => row.map((cell, i) => (i === row.length - 1 ? cell : cell + " ".repeat((widths[i] as number) - visibleWidth(cell)))).join("  "));
}

/** `text` on one line, cut to `max` characters with an ellipsis. */
export function oneLine(text: string, max = 72): string {
  // Only a bounded prefix is flattened and split, so a 100 MB message costs what a short one does.
  const limit = max * 8;
  const cut = text.length > limit;
  let window = cut ? text.slice(0, limit) : text;
  if (cut && /[\ud800-\udbff]$/.test(window)) window = window.slice(0, -1);
  const flat = window.replace(/\s+/g, " ").trim();
  const chars = [...flat];
  return chars.length <= max && !cut ? flat : `${chars.slice(0, max - 1).join("")}…`;
}

/** `n` and the noun, singular for one: `1 session`, `2 sessions`, `3 directories`. */
export function plural(n: number, singular: string, many = `${singular}s`): string {
  return `${n} ${n === 1 ? singular : many}`;
}

/** A local time as `YYYY-MM-DD HH:MM`. */
export function shortTime(date: Date): string {
  const pad = (n: number) => String(n).padStart(2, "0");
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())} ${pad(date.getHours())}:${pad(date.getMinutes())}`;
}

/** The code of a library error, or a generic one for anything else. */
export function errorCode(error: unknown): string {
  if (error instanceof GjcError) return error.code;
  const code = error instanceof Error ? (error as NodeJS.ErrnoException).code : undefined;
  return typeof code === "string" ? code : "internal_error";
}

/** What a refusal or failure on a named file means to a person, by code: the syscall and errno behind it are for `--verbose`. */
const FILE_FAILURES: Readonly<Record<string, string>> = {
  symlink_refused: "is a symbolic link, and links are never followed",
  not_found: "does not exist",
  not_regular_file: "is not a regular file",
  not_directory: "is not a directory",
  permission_denied: "cannot be opened: permission denied",
  read_failed: "could not be read",
  unsafe_entry: "is not owner-only (its mode, owner or link count)",
};

/** The message of `error` in a person's terms: a failure on a named file says what is wrong with it. */
function plainMessage(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const { path: file, detail } = error as { path?: unknown; detail?: unknown };
  const meaning = error instanceof GjcError ? FILE_FAILURES[error.code] : undefined;
  if (meaning === undefined || typeof file !== "string") return error.message;
  // Which owner-only rule failed is a fact about the file, in the library's words (`mode_mismatch`).
  return typeof detail === "string" ? `${file} ${meaning} (${detail})` : `${file} ${meaning}`;
}

/** Longest message printed (one line); the library's messages put their advice first. */
const MESSAGE_MAX = 1000;

/** Writes `lines` to `stream`, each through {@link terminalLine} and ended by a newline: the only newlines printed for a person. */
export function writeLines(stream: { write(text: string): unknown }, lines: readonly string[]): void {
  stream.write(lines.map((line) => `${terminalLine(line)}\n`).join(""));
}

/** The lines of `gjc-session: <code>: <message>`; with `verbose`, then the library's own message, the class, extra fields, causes and stack frames. */
export function formatError(error: unknown, verbose: boolean, style: Style): string[] {
  const message = plainMessage(error);
  const first = `${style.red("gjc-session:")} ${style.bold(errorCode(error))}: ${oneLine(message, MESSAGE_MAX)}`;
  if (!verbose) return [first];
  const lines = [first];
  if (error instanceof Error && error.message !== message) lines.push(`  ${oneLine(error.message, MESSAGE_MAX)}`);
  let current: unknown = error;
  for (let depth = 0; current instanceof Error && depth < 8; depth++) {
    const extra = Object.entries(current).filter(([key]) => key !== "code" && key !== "name" && key !== "message");
    lines.push(`  ${depth === 0 ? "" : "caused by "}${current.name}${extra.length > 0 ? ` ${JSON.stringify(Object.fromEntries(extra))}` : ""}`);
    // Only the frames: the stack's first lines repeat the message, which may hold newlines of its own.
    if (current.stack !== undefined)
      lines.push(
        ...current.stack
          .split("\n")
          .filter((l) => /^\s+at /.test(l))
          .map((l) => `    ${l.trim()}`),
      );
    current = current.cause;
  }
  return lines;
}
