/** What a session picker shows about one session file (from its first few kilobytes, completed by the rest scan), or why the file is left out, and the record a listing keeps of it; no I/O. */
import {
  SessionFormatError,
  schemaChecks,
  checkHeaderVersion,
  isJsonRecord,
  replayPatches,
  scanJsonl,
  type JsonRecord,
  type ReplayItem,
  type SessionHeader,
} from "../session/index.js";
import { StorageError, type StorageErrorCode, type StorageStat } from "../storage/index.js";
import { sanitizeSessionTitle } from "./title.js";

/** Bytes read from the start of every listed file and summarised whole; the rest is scanned only for messages and patches. */
export const SESSION_LIST_PREFIX_BYTES = 4096;

/** Shown as {@link SessionInfo.firstMessage} when the prefix holds no user message. */
export const NO_MESSAGES = "(no messages)";

/**
 * Why a file was left out of a listing (one file never fails a listing): `empty` (no record),
 * `invalid_header` (the first record is no well-formed `session` header with a string id),
 * `version_too_new` (an integer above the one this library reads), `invalid_version` (present but no
 * integer in 1..5), `symlink_refused` (a link, never followed), `not_regular_file` (a FIFO, socket,
 * device or directory), `permission_denied`, `not_found` (gone since the directory read),
 * `unsafe_entry` (managed storage: failed the owner-only checks), `read_failed` (any other read
 * failure), `session_busy` (`continueRecent` only: a live process holds the writer lock), `line_too_long`
 * (`continueRecent` only: a line no string can hold, so the session cannot be loaded).
 */
export type DiscoverySkipCode =
  | "empty"
  | "invalid_header"
  | "version_too_new"
  | "invalid_version"
  | "symlink_refused"
  | "not_regular_file"
  | "permission_denied"
  | "not_found"
  | "unsafe_entry"
  | "read_failed"
  | "session_busy"
  | "line_too_long";

/** One file left out of a listing. */
export interface SkippedSession {
  readonly path: string;
  readonly code: DiscoverySkipCode;
  /** The lower layer's code behind `code`: for `unsafe_entry` the owner-only rule failed (`mode_mismatch`, ...). */
  readonly detail?: string;
}

// The storage failures a listing or `continueRecent` reports under the storage's own code.
const PASSED_THROUGH: ReadonlySet<StorageErrorCode> = new Set<StorageErrorCode>([
  "symlink_refused",
  "not_regular_file",
  "permission_denied",
  "not_found",
  "unsafe_entry",
]);

function skipCodeOf(error: unknown): DiscoverySkipCode {
  if (error instanceof StorageError) {
    if (PASSED_THROUGH.has(error.code)) return error.code as DiscoverySkipCode;
    if (error.code === "not_directory") return "not_regular_file";
  }
  return "read_failed";
}

/** The skip row of a storage failure on `file` (anything unexpected is `read_failed`), with the lower layer's `detail` if any (which owner-only rule an `unsafe_entry` broke). */
export function skipOf(file: string, error: unknown): SkippedSession {
  const code = skipCodeOf(error);
  const detail = error instanceof StorageError ? error.detail : undefined;
  return detail === undefined ? { path: file, code } : { path: file, code, detail };
}

/** Why `continueRecent` passes over `file` it failed to open (another writer holds it, or a listing would refuse it too); `undefined` for any other failure, which the caller rethrows. */
export function resumeSkipOf(file: string, error: unknown): SkippedSession | undefined {
  // A file no load can finish is passed over like a refused one, so the workspace can still resume or start anew.
  if (error instanceof SessionFormatError && error.code === "line_too_long") return { path: file, code: "line_too_long" };
  if (!(error instanceof StorageError)) return undefined;
  if (error.code === "session_busy") return { path: file, code: "session_busy" };
  return PASSED_THROUGH.has(error.code) && error.code !== "not_found" ? skipOf(file, error) : undefined;
}

/** Metadata of one session file for pickers and `--resume` lookups. Treat as read-only. */
export interface SessionInfo {
  /** Absolute path of the session file. */
  readonly path: string;
  /** The header's session id. */
  readonly id: string;
  /** Working directory: the header's, or the latest `header_patch` cwd; `""` when absent. */
  readonly cwd: string;
  /** Latest title (header, `header_patch`, or a compaction's short summary in the prefix). */
  readonly title?: string;
  /** The header's `parentSession` (the session this one was forked from). */
  readonly parentSession?: string;
  /** The header timestamp; the file's mtime when the header has none that parses. */
  readonly created: Date;
  /** The file's modification time. */
  readonly modified: Date;
  /** `message` entries in the file: a lower bound when {@link messageCountIsEstimate}. */
  readonly messageCount: number;
  /** True when the file shrank while it was read, so {@link messageCount} is not exact (such a result is never remembered). */
  readonly messageCountIsEstimate: boolean;
  /** File size in bytes. */
  readonly size: number;
  /** Text of the first user message, or {@link NO_MESSAGES}. */
  readonly firstMessage: string;
  /** Text of the user and assistant messages in the file's first {@link SESSION_LIST_PREFIX_BYTES}, and the first user message wherever it is, for picker search. */
  readonly allMessagesText: string;
  /** One-line label: the title, else the first user message, else `Untitled · HH:MM`. */
  readonly displayName: string;
  /** The header version as stored (1 when absent). */
  readonly version: number;
}

/** What the prefix says about a file with a usable header (counts and texts completed by the rest scan for a longer file). */
export interface PrefixSummary {
  kind: "session";
  id: string;
  cwd: string;
  title: string | undefined;
  /** the last compaction's short summary in the prefix (a title fallback) */
  shortSummary: string | undefined;
  parentSession: string | undefined;
  timestamp: string | undefined;
  version: number;
  /** `message` entries up to where the file was read (the whole file once the listing scanned past the prefix) */
  messageCount: number;
  firstMessage: string | undefined;
  allMessagesText: string;
  /** Bytes of whole lines parsed here, where a backward patch scan may stop; 0 when the prefix is not valid UTF-8. */
  parsedBytes: number;
}

/** A file the listing leaves out. */
export interface PrefixRejection {
  kind: "skip";
  code: Extract<DiscoverySkipCode, "empty" | "invalid_header" | "version_too_new" | "invalid_version">;
}

const REPLACEMENT_CHARACTER = "\ufffd";

/** Summarises a session file from its decoded prefix `text`; unless `whole` (the prefix is the file), its cut last line is ignored, never salvaged into something else. */
export function summarizePrefix(text: string, whole: boolean): PrefixSummary | PrefixRejection {
  const cut = whole ? text.length : text.lastIndexOf("\n") + 1;
  const body = text.slice(0, cut);
  let header: JsonRecord | undefined;
  let invalidBeforeHeader = false;
  const patches: ReplayItem[] = [];
  const messages = new MessageCollector();
  let shortSummary: string | undefined;
  scanJsonl(body, {
    record(value, line) {
      if (header === undefined) {
        header = value;
        return;
      }
      if (value.type === "message") messages.add(value.message);
      else if (value.type === "header_patch") patches.push({ kind: "patch", value, line });
      else if (value.type === "compaction" && typeof value.shortSummary === "string") shortSummary = value.shortSummary;
    },
    invalid() {
      if (header === undefined) invalidBeforeHeader = true;
    },
  });
  // A header line longer than the prefix: its fields are read from the raw text, so the session is still listed.
  if (header === undefined && !whole && body.length === 0) header = scanCutHeader(text);
  if (header === undefined) {
    return { kind: "skip", code: invalidBeforeHeader || text.trim().length > 0 ? "invalid_header" : "empty" };
  }
  if (header.type !== "session" || typeof header.id !== "string") return { kind: "skip", code: "invalid_header" };
  let version: number;
  try {
    version = checkHeaderVersion(header);
  } catch (error) {
    if (error instanceof SessionFormatError && (error.code === "version_too_new" || error.code === "invalid_version"))
      return { kind: "skip", code: error.code };
    throw error;
  }
  if (!schemaChecks().SessionHeaderSchema(header)) return { kind: "skip", code: "invalid_header" };
  const effective: SessionHeader = replayPatches(header as SessionHeader, patches, version).header;
  return {
    kind: "session",
    id: effective.id,
    cwd: effective.cwd ?? "",
    title: effective.title,
    shortSummary,
    parentSession: effective.parentSession,
    timestamp: effective.timestamp,
    version,
    messageCount: messages.count,
    firstMessage: messages.first,
    allMessagesText: messages.all.join(" "),
    parsedBytes: body.includes(REPLACEMENT_CHARACTER) ? 0 : Buffer.byteLength(body, "utf8"),
  };
}

/** Late values found by the backward scan; each overrides what the prefix said. */
export interface LatePatches {
  title?: string;
  cwd?: string;
}

/** What a listing learned about one file: its metadata (with what it was built from), or why it is left out. */
export type CachedOutcome = { kind: "session"; info: SessionInfo; summary: PrefixSummary; late: LatePatches } | { kind: "skip"; code: DiscoverySkipCode };

/** One file's stored listing result: the identity it was read with (`ctimeMs` where the storage reports it), the outcome, where to resume. */
export interface ListingRecord extends Pick<StorageStat, "dev" | "ino" | "size" | "mtimeMs" | "ctimeMs"> {
  outcome: CachedOutcome;
  resume: ResumePoint | undefined;
}

/** Where a later listing may resume scanning a v4/v5 file that only grew: what was found so far, and what must still hold (same prefix, same bytes before `offset`). */
export interface ResumePoint {
  /** end of the complete lines already scanned */
  offset: number;
  /** the last bytes before `offset`, as read */
  boundary: Buffer;
  /** SHA-256 of the prefix text, as read */
  prefixDigest: string;
  summary: PrefixSummary;
  late: LatePatches;
}

/** Builds the listing entry of one file from its summary, late patches and stat; `partial` when the read ended early. */
export function buildSessionInfo(
  path: string,
  summary: PrefixSummary,
  late: LatePatches,
  stat: { size: number; mtimeMs: number },
  partial = false,
): SessionInfo {
  const modified = new Date(stat.mtimeMs);
  const parsed = summary.timestamp === undefined ? Number.NaN : Date.parse(summary.timestamp);
  const created = Number.isNaN(parsed) ? modified : new Date(parsed);
  const title = late.title ?? summary.title ?? summary.shortSummary;
  // Built by assignment in field order: conditional spreads cost several times as much, once per file.
  const info: Mutable<SessionInfo> = { path, id: summary.id, cwd: late.cwd ?? summary.cwd } as Mutable<SessionInfo>;
  if (title !== undefined) info.title = title;
  if (summary.parentSession !== undefined) info.parentSession = summary.parentSession;
  info.created = created;
  info.modified = modified;
  info.messageCount = summary.messageCount;
  info.messageCountIsEstimate = partial;
  info.size = stat.size;
  info.firstMessage = summary.firstMessage ?? NO_MESSAGES;
  info.allMessagesText = summary.allMessagesText;
  info.displayName = displayNameOf(title, summary.firstMessage, created);
  info.version = summary.version;
  return info;
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

/** Longest label a picker gets; the rest is cut with an ellipsis. */
const DISPLAY_NAME_MAX = 120;

function displayNameOf(title: string | undefined, firstMessage: string | undefined, created: Date): string {
  const label = (title === undefined ? "" : sanitizeSessionTitle(title)) || (firstMessage === undefined ? "" : sanitizeSessionTitle(firstMessage));
  if (label.length > 0) return label.length > DISPLAY_NAME_MAX ? `${label.slice(0, DISPLAY_NAME_MAX - 1)}…` : label;
  const hh = String(created.getHours()).padStart(2, "0");
  const mm = String(created.getMinutes()).padStart(2, "0");
  return `Untitled · ${hh}:${mm}`;
}

/** Counts `message` entries and keeps the text a picker shows and searches. */
export class MessageCollector {
  /** Messages seen. */
  count = 0;
  /** The first user text. */
  first: string | undefined;
  /** Every user and assistant text, in order. */
  readonly all: string[] = [];

  /** A collector going on from what `summary` collected. */
  static continuing(summary: Pick<PrefixSummary, "messageCount" | "firstMessage" | "allMessagesText">): MessageCollector {
    const collector = new MessageCollector();
    collector.count = summary.messageCount;
    collector.first = summary.firstMessage;
    if (summary.allMessagesText.length > 0) collector.all.push(summary.allMessagesText);
    return collector;
  }

  /** An independent collector holding what this one holds now. */
  copy(): MessageCollector {
    const collector = new MessageCollector();
    collector.count = this.count;
    collector.first = this.first;
    collector.all.push(...this.all);
    return collector;
  }

  /** Takes one `message` entry's message past the prefix: counted, its text kept only when it is the first user message (picker search stays bounded). */
  addBeyondPrefix(message: unknown): void {
    if (!isJsonRecordLike(message) || typeof message.role !== "string") return;
    this.count += 1;
    if (message.role !== "user" || this.first !== undefined) return;
    const text = textOf(message.content);
    if (text.length === 0) return;
    this.first = text;
    this.all.push(text);
  }

  /** Takes one `message` entry's message. */
  add(message: unknown): void {
    if (!isJsonRecordLike(message) || typeof message.role !== "string") return;
    this.count += 1;
    if (message.role !== "user" && message.role !== "assistant") return;
    const text = textOf(message.content);
    if (text.length === 0) return;
    if (message.role === "user" && this.first === undefined) this.first = text;
    this.all.push(text);
  }
}

function isJsonRecordLike(value: unknown): value is { role?: unknown; content?: unknown } {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The text of message content: a string, or the `text` blocks of a block list joined by spaces. */
function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  const parts: string[] = [];
  for (const block of content) {
    if (isJsonRecord(block) && block.type === "text" && typeof block.text === "string") parts.push(block.text);
  }
  return parts.join(" ");
}

const CUT_HEADER_FIELDS = ["type", "id", "cwd", "timestamp", "title", "parentSession"] as const;

/** Header fields from a first line the prefix cut off, each only as a complete JSON value (a truncated one is left out); `type` must come first, as writers put it. */
function scanCutHeader(text: string): JsonRecord | undefined {
  const start = text.charCodeAt(0) === 0xfeff ? 1 : 0;
  if (!text.startsWith('{"type":"session"', start)) return undefined;
  const header: Record<string, unknown> = {};
  for (const field of CUT_HEADER_FIELDS) {
    const match = new RegExp(`"${field}":("(?:[^"\\\\]|\\\\.)*")`).exec(text);
    if (match?.[1] !== undefined) header[field] = JSON.parse(match[1]) as string;
  }
  const version = /"version":(-?\d+(?:\.\d+)?)[,}]/.exec(text);
  if (version?.[1] !== undefined) header.version = Number(version[1]);
  return isJsonRecord(header) ? header : undefined;
}
