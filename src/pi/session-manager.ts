/**
 * pi's `SessionManager` (pi 0.58.3 / 0.73.1 signatures) as a thin layer over the main entry's
 * manager: every call goes to one GJC-shaped manager it holds, through that manager's own
 * load path, tree, append path and writer. Only the shapes differ:
 *
 * - the switches pi's runtime uses without awaiting (`open`, `continueRecent`, `forkFrom`,
 *   `newSession`, `setSessionFile`, `createBranchedSession`) are synchronous;
 * - appends write pi's fields (`provider`/`modelId`, `fromHook`, `session_info`, no
 *   `attribution`), and `buildSessionContext` answers in pi's shape, with pi's model rule;
 * - the first write of a session file happens inside the append that triggers it, so the file
 *   exists as soon as the first assistant message is appended, and every later append reaches
 *   the kernel before it returns. pi never calls `close()`: a pi manager keeps its file's
 *   writer lock until the process exits or the manager switches away from the file. Another
 *   process's writable open of that file is refused with `session_busy`. Within the process,
 *   a pi `open` (or `setSessionFile`) of a file another pi manager is on takes the file over
 *   (pi's runtime reopens the current file to fork or resume it): the earlier manager is
 *   closed, and its later writes throw `closed`.
 *
 * Our extras (agent directory, logger, clock, blob store, terminal id) are an optional
 * trailing options argument of the factories, as on the main entry.
 */
import path from "node:path";

import type { ListOptions, SessionManagerOptions } from "../manager/index.js";
import { SessionManager as GjcSessionManager, synchronousSwitches } from "../manager/session-manager.js";
import { SessionManagerError } from "../manager/errors.js";
import { isStorageError } from "../storage/index.js";
import { readSessionRecords } from "../manager/session-files.js";
import {
  buildPiSessionContext,
  getLatestCompactionEntry,
  piModelChangeDraft,
  sessionInfoDraft,
  type AgentMessage,
  type CompactionEntry,
  type CustomMessageEntry,
  type FileEntry,
  type PiSessionContext,
  type SessionHeader,
  type SessionTreeNode as GjcTreeNode,
} from "../session/index.js";
import { findMostRecentSession, listAllSessionsPi, listSessionsPi, type ListProgress, type SessionInfo } from "./files.js";

const hooks = synchronousSwitches();

/** pi takes session directories as the file system does: relative to the process's cwd. */
const absoluteDir = (dir: string | undefined): string | undefined => (dir === undefined ? undefined : path.resolve(dir));

/** The pi managers of this process that may hold a file (see the module comment). */
const live = new Set<WeakRef<SessionManager>>();

/** One node of pi's {@link SessionManager.getTree}. */
export interface SessionTreeNode {
  entry: FileEntry;
  /** Children in file order. */
  children: SessionTreeNode[];
  /** The entry's current label, if any. */
  label?: string;
  /** When the label in force was set (the latest label change's timestamp). */
  labelTimestamp?: string;
}

/** Options of pi's {@link SessionManager.newSession}. */
export interface NewSessionOptions {
  /** The new session's id (a UUIDv7, or 1-128 characters from `[A-Za-z0-9._-]`). */
  id?: string;
  /** Recorded in the new header as where this session came from. */
  parentSession?: string;
}

/** See the module comment. */
export class SessionManager {
  readonly #gjc: GjcSessionManager;
  readonly #cwdOverride: string | undefined;
  readonly #ref = new WeakRef(this);

  private constructor(gjc: GjcSessionManager, cwdOverride?: string) {
    hooks.writeThrough(gjc);
    this.#gjc = gjc;
    this.#cwdOverride = cwdOverride;
    if (gjc.isPersisted()) live.add(this.#ref);
  }

  /**
   * Runs `attempt`; when it finds `file` held and another pi manager of this process is on
   * that file, closes that manager (synchronously, everything it wrote is on disk) and tries
   * once more.
   */
  static #takingOver<T>(file: string, except: SessionManager | undefined, attempt: () => T): T {
    try {
      return attempt();
    } catch (error) {
      if (!isStorageError(error, "session_busy") || !SessionManager.#release(file, except)) throw error;
      return attempt();
    }
  }

  static #release(file: string, except: SessionManager | undefined): boolean {
    for (const ref of live) {
      const holder = ref.deref();
      if (holder === undefined) {
        live.delete(ref);
        continue;
      }
      if (holder === except || holder.#gjc.getSessionFile() !== file) continue;
      if (!hooks.releaseNow(holder.#gjc)) return false;
      live.delete(ref);
      return true;
    }
    return false;
  }

  // ---- factories -------------------------------------------------------------------------

  /**
   * A new session for `cwd` in `sessionDir` (omitted: our managed scope of `cwd`, see
   * `getDefaultSessionDir`). Nothing is written until the first assistant message.
   */
  static create(cwd: string, sessionDir?: string, options: SessionManagerOptions = {}): SessionManager {
    return new SessionManager(GjcSessionManager.create(cwd, absoluteDir(sessionDir), undefined, options));
  }

  /**
   * Opens the session file `filePath` synchronously; `sessionDir` (default: the file's
   * directory) is where new and branched sessions go, and `cwdOverride` replaces the header's
   * working directory for {@link getCwd}. A missing file starts a new session at that path
   * (written by the deferred rule); a blank file, or one with an unusable header (moved aside
   * first, see the README), is replaced by a new session whose header is written at once.
   * @throws StorageError `session_busy` when another writer holds the file;
   *   SessionFormatError `version_too_new` / `invalid_version`
   */
  static open(filePath: string, sessionDir?: string, cwdOverride?: string, options: SessionManagerOptions = {}): SessionManager {
    if (typeof filePath !== "string" || filePath.length === 0) throw new SessionManagerError("invalid_options", "filePath must be a non-empty string");
    const file = path.resolve(filePath);
    const gjc = SessionManager.#takingOver(file, undefined, () => hooks.open(file, absoluteDir(sessionDir), undefined, options));
    const manager = new SessionManager(gjc, cwdOverride);
    hooks.writeReplacedNow(gjc);
    return manager;
  }

  /**
   * Opens the newest session of `sessionDir` (default: the managed scope of `cwd`) whose
   * header is usable, else starts a new one for `cwd`. Synchronous.
   */
  static continueRecent(cwd: string, sessionDir?: string, options: SessionManagerOptions = {}): SessionManager {
    const dir = absoluteDir(sessionDir) ?? GjcSessionManager.getDefaultSessionDir(cwd, options.agentDir);
    const newest = findMostRecentSession(dir, options);
    if (newest !== null) return SessionManager.open(newest, sessionDir, undefined, options);
    return SessionManager.create(cwd, sessionDir, options);
  }

  /**
   * A new session for `targetCwd` in `sessionDir` (default: its managed scope) holding a copy
   * of every entry of `sourcePath`, with `parentSession` = `sourcePath`, written before this
   * returns. Synchronous.
   * @throws SessionManagerError `invalid_header` for a source that is missing, empty or has no
   *   usable header ("Cannot fork")
   */
  static forkFrom(sourcePath: string, targetCwd: string, sessionDir?: string, options: SessionManagerOptions = {}): SessionManager {
    const source = path.resolve(sourcePath);
    if (readSessionRecords(source).length === 0) {
      throw new SessionManagerError("invalid_header", `Cannot fork: ${source} is missing, empty or has no session header`, { path: source });
    }
    return new SessionManager(hooks.forkFrom(source, targetCwd, absoluteDir(sessionDir), options, { parentSession: source, writeAtOnce: true }));
  }

  /** A session that never touches the disk. */
  static inMemory(cwd: string = process.cwd()): SessionManager {
    return new SessionManager(GjcSessionManager.inMemory(cwd));
  }

  /**
   * The sessions of `sessionDir`, else of the managed scope of `cwd`, newest first, in pi's
   * row shape (whole files read; `onProgress` after each). Never writes.
   */
  static async list(cwd: string, sessionDir?: string, onProgress?: ListProgress, options: ListOptions = {}): Promise<SessionInfo[]> {
    return listSessionsPi(cwd, sessionDir, onProgress, options);
  }

  /** The sessions of every managed scope, newest first, in pi's row shape. Never writes. */
  static async listAll(onProgress?: ListProgress, options: ListOptions = {}): Promise<SessionInfo[]> {
    return listAllSessionsPi(onProgress, options);
  }

  // ---- identity and files ----------------------------------------------------------------

  /** The working directory: the `cwdOverride` of {@link open}, else the header's. */
  getCwd(): string {
    return this.#cwdOverride ?? this.#gjc.getCwd();
  }

  /** Where new and branched session files go; `""` in memory. */
  getSessionDir(): string {
    return this.#gjc.getSessionDir();
  }

  /** The session id. */
  getSessionId(): string {
    return this.#gjc.getSessionId();
  }

  /** The session file; `undefined` in memory. */
  getSessionFile(): string | undefined {
    return this.#gjc.getSessionFile();
  }

  /** Whether this manager writes to disk. */
  isPersisted(): boolean {
    return this.#gjc.isPersisted();
  }

  /** The session header (the live record). */
  getHeader(): SessionHeader {
    return this.#gjc.getHeader();
  }

  /** The session's name by pi's rule: the latest `session_info` decides, an empty one clears. */
  getSessionName(): string | undefined {
    return hooks.tree(this.#gjc).getSessionInfoName();
  }

  // ---- switching sessions (synchronous) --------------------------------------------------

  /**
   * Starts a new, empty session in the same directory (with the caller's `id` when given); the
   * previous file is finished in the background.
   * @returns the new session file, or `undefined` in memory
   * @throws SessionManagerError `invalid_session_id`
   */
  newSession(options: NewSessionOptions = {}): string | undefined {
    const { id, parentSession } = options;
    return hooks.newSession(this.#gjc, { ...(id === undefined ? {} : { id }), ...(parentSession === undefined ? {} : { parentSession }) });
  }

  /**
   * Switches to the session file `sessionFile`: an existing session is loaded with the same
   * checks as {@link open}; a missing or blank file gets a fresh session at that path, and a
   * file with an unusable header is moved aside first and replaced by a fresh session.
   * A file another pi manager of this process is on is taken over (see the module comment).
   * @throws StorageError `session_busy` for the file this manager is on (or still finishing),
   *   or one another process holds
   */
  setSessionFile(sessionFile: string): void {
    const file = path.resolve(sessionFile);
    SessionManager.#takingOver(file, this, () => hooks.setSessionFile(this.#gjc, file));
  }

  /**
   * Switches to a new session holding root..`leafId` (labels of the copied entries carried),
   * with the previous file as `parentSession`; written before this returns.
   * @returns the new session file, or `undefined` in memory
   * @throws SessionTreeError `unknown_entry`
   */
  createBranchedSession(leafId: string): string | undefined {
    return this.#gjc.createBranchedSession(leafId);
  }

  // ---- appends (each returns the new entry's id, which becomes the leaf) -----------------

  /** Appends a `message` entry. */
  appendMessage(message: AgentMessage): string {
    return this.#gjc.appendMessage(message);
  }

  /** Appends a `thinking_level_change` with `thinkingLevel`. */
  appendThinkingLevelChange(thinkingLevel: string): string {
    return hooks.append(this.#gjc, { type: "thinking_level_change", thinkingLevel }).id;
  }

  /** Appends pi's `model_change`: `provider` and `modelId`. */
  appendModelChange(provider: string, modelId: string): string {
    return hooks.append(this.#gjc, piModelChangeDraft(provider, modelId)).id;
  }

  /** Appends a `compaction` (pi's order; `fromHook` is written as given). */
  appendCompaction<T = unknown>(summary: string, firstKeptEntryId: string, tokensBefore: number, details?: T, fromHook?: boolean): string {
    return hooks.append(this.#gjc, {
      type: "compaction",
      summary,
      firstKeptEntryId,
      tokensBefore,
      ...(details === undefined ? {} : { details }),
      ...(fromHook === undefined ? {} : { fromHook }),
    }).id;
  }

  /**
   * Moves the leaf to `branchFromId` (`null`: before the first entry) and appends a
   * `branch_summary` of the path that was left, with pi's `fromHook`.
   * @throws SessionTreeError `unknown_entry`
   */
  branchWithSummary(branchFromId: string | null, summary: string, details?: unknown, fromHook?: boolean): string {
    return hooks.branchWithSummary(this.#gjc, branchFromId, summary, {
      ...(details === undefined ? {} : { details }),
      ...(fromHook === undefined ? {} : { fromHook }),
    });
  }

  /** Appends a `custom` entry (extension state, not in the model context). */
  appendCustomEntry(customType: string, data?: unknown): string {
    return this.#gjc.appendCustomEntry(customType, data);
  }

  /** Appends a `custom_message` (extension text in the model context), without an attribution. */
  appendCustomMessageEntry<T = unknown>(customType: string, content: CustomMessageEntry["content"], display: boolean, details?: T): string {
    return hooks.append(this.#gjc, {
      type: "custom_message",
      customType,
      content,
      display,
      ...(details === undefined ? {} : { details }),
    }).id;
  }

  /** Appends a `session_info` naming the session (trimmed; an empty name clears it). */
  appendSessionInfo(name: string): string {
    return hooks.append(this.#gjc, sessionInfoDraft(name)).id;
  }

  /**
   * Appends a `label` for `targetId` (`undefined` or `""` clears it).
   * @throws SessionTreeError `unknown_entry`
   */
  appendLabelChange(targetId: string, label: string | undefined): string {
    return this.#gjc.appendLabelChange(targetId, label);
  }

  // ---- tree --------------------------------------------------------------------------------

  /** Moves the leaf to `entryId`. @throws SessionTreeError `unknown_entry` */
  branch(entryId: string): void {
    this.#gjc.branch(entryId);
  }

  /** Clears the leaf: the next append starts a new root. */
  resetLeaf(): void {
    this.#gjc.resetLeaf();
  }

  /** The current leaf id; `null` after {@link resetLeaf}. */
  getLeafId(): string | null {
    return this.#gjc.getLeafId();
  }

  /** A copy of the leaf entry. */
  getLeafEntry(): FileEntry | undefined {
    return this.#gjc.getLeafEntry();
  }

  /** A copy of the entry with `id`. */
  getEntry(id: string): FileEntry | undefined {
    return this.#gjc.getEntry(id);
  }

  /** Copies of every entry (header excluded), in file order. */
  getEntries(): FileEntry[] {
    return this.#gjc.getEntries();
  }

  /** Copies of root..`fromId` (default: the leaf); `[]` for an unknown id. */
  getBranch(fromId?: string): FileEntry[] {
    return this.#gjc.getBranch(fromId);
  }

  /** Copies of the direct children of `parentId`. */
  getChildren(parentId: string): FileEntry[] {
    return this.#gjc.getChildren(parentId);
  }

  /** The resolved label of an entry. */
  getLabel(id: string): string | undefined {
    return this.#gjc.getLabel(id);
  }

  /** The session tree, each labelled node with the time its label was set. */
  getTree(): SessionTreeNode[] {
    const labelTimes = new Map<string, string>();
    for (const entry of hooks.tree(this.#gjc).getEntries()) {
      if (entry.type === "label") {
        const { targetId, timestamp } = entry as { targetId?: unknown; timestamp?: unknown };
        if (typeof targetId === "string" && typeof timestamp === "string") labelTimes.set(targetId, timestamp);
      }
    }
    const convert = (node: GjcTreeNode): SessionTreeNode => {
      const out: SessionTreeNode = { entry: node.entry, children: node.children.map(convert) };
      if (node.label !== undefined) {
        out.label = node.label;
        const id = (node.entry as { id?: unknown }).id;
        const time = typeof id === "string" ? labelTimes.get(id) : undefined;
        if (time !== undefined) out.labelTimestamp = time;
      }
      return out;
    };
    return this.#gjc.getTree().map(convert);
  }

  /** What the model sees at the leaf, in pi's shape and by pi's model rule. */
  buildSessionContext(): PiSessionContext {
    const tree = hooks.tree(this.#gjc);
    return buildPiSessionContext(tree.getEntries(), tree.getLeafId(), tree.index);
  }

  /** The latest compaction on the current branch, or `null`. */
  getLatestCompactionEntry(): CompactionEntry | null {
    return getLatestCompactionEntry(this.#gjc.getBranch());
  }

  // ---- our extras ------------------------------------------------------------------------

  /** Waits for queued writes and syncs the file (pi never calls it; appends are already written). */
  async flush(): Promise<void> {
    await this.#gjc.flush();
  }

  /** Flushes and releases the file's writer lock (pi never calls it; see the module comment). */
  async close(): Promise<void> {
    live.delete(this.#ref);
    await this.#gjc.close();
  }
}
