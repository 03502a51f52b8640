/**
 * pi's `SessionManager` (pi 0.58.3 / 0.73.1 signatures) over one GJC-shaped manager it holds;
 * only the shapes differ. The switches pi's runtime does not await are synchronous; appends
 * write pi's fields and `buildSessionContext` answers by pi's model rule; every append reaches
 * the kernel before it returns (the file exists from the first assistant message on).
 *
 * pi never calls `close()`: a manager holds its file's writer lock until the process exits or it
 * switches away, so another process's writable open gets `session_busy`. Within the process, a pi
 * `open` (or `setSessionFile`) of a file another pi manager is on takes it over (pi reopens the
 * current file to fork or resume it): the earlier manager is closed, its later writes throw `closed`.
 */
import path from "node:path";

import type { ListOptions, SessionManagerOptions } from "../manager/index.js";
import { defined } from "../manager/appender.js";
import { SessionManager as GjcSessionManager, synchronousSwitches } from "../manager/session-manager.js";
import { SessionManagerError } from "../manager/errors.js";
import { FileSessionStorage, isStorageError } from "../storage/index.js";
import { resumeSkipOf, type SkippedSession } from "../manager/session-info.js";
import { readSessionRecords } from "../manager/session-files.js";
import {
  getLatestCompactionEntry,
  piModelChangeDraft,
  sessionInfoDraft,
  type AgentMessage,
  type CompactionEntry,
  type CustomMessageEntry,
  type FileEntry,
  type SessionTreeNode as GjcTreeNode,
} from "../session/index.js";
import { buildPiAgentSessionContext, type PiAgentSessionContext } from "./context-messages.js";
import type { PiAppendableMessage, PiCustomContent } from "./messages.js";
import { piInfos, recentSessions, withPiAgentDir, type ListProgress, type PiSessionManagerOptions, type SessionInfo } from "./files.js";
import { copyOfLegacyFile, isLegacyFolder, preparedScope, resumeChoices, uncopiedLegacyFiles, uncopiedSessions } from "./legacy.js";
import { ScopeError } from "../scope/index.js";

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

/** The calls whose pi and GJC signatures agree: each forwards to the held manager as it is (appends stay direct calls, a hot path). */
const FORWARDED = [
  "getSessionDir",
  "getSessionId",
  "getSessionFile",
  "isPersisted",
  "getHeader",
  "flush",
  "createBranchedSession",
  "branch",
  "resetLeaf",
  "getLeafId",
  "getLeafEntry",
  "getEntry",
  "getEntries",
  "getBranch",
  "getChildren",
  "getLabel",
] as const satisfies readonly (keyof GjcSessionManager)[];

/** The {@link FORWARDED} calls, with the main entry's signatures and documentation. */
export interface SessionManager extends Pick<GjcSessionManager, (typeof FORWARDED)[number]> {}

/** See the module comment. */
export class SessionManager {
  readonly #gjc: GjcSessionManager;
  readonly #cwdOverride: string | undefined;
  readonly #ref = new WeakRef(this);

  private constructor(gjc: GjcSessionManager, cwdOverride?: string) {
    this.#gjc = gjc;
    this.#cwdOverride = cwdOverride;
    if (gjc.isPersisted()) live.add(this.#ref);
    hooks.adopt(gjc);
  }

  static {
    for (const name of FORWARDED) {
      const method = GjcSessionManager.prototype[name] as (...args: unknown[]) => unknown;
      // A computed method name keeps `name` on the function, as stack traces show it.
      const forward = {
        [name](this: SessionManager, ...args: unknown[]) {
          return method.apply(this.#gjc, args);
        },
      }[name];
      Object.defineProperty(SessionManager.prototype, name, {
        value: forward,
        writable: true,
        configurable: true,
      });
    }
  }

  /** Runs `attempt`; when `file` is held by another pi manager of this process, closes that one (synchronously) and retries once. */
  static #takingOver<T>(file: string, except: SessionManager | undefined, attempt: () => T): T {
    try {
      return attempt();
    } catch (error) {
      if (!isStorageError(error, "session_busy")) throw error;
      for (const ref of live) {
        const holder = ref.deref();
        if (holder === undefined) live.delete(ref);
        else if (holder !== except && holder.#gjc.getSessionFile() === file) {
          if (!hooks.releaseNow(holder.#gjc)) throw error;
          live.delete(ref);
          return attempt();
        }
      }
      throw error;
    }
  }

  /**
   * A new session for `cwd` in `sessionDir` (default its managed scope below pi's agent directory, prepared as
   * `preparedScope` says: a looser directory on the way is made owner-only and reported to `options.onTightened`); written from the first
   * assistant message.
   */
  static create(cwd: string, sessionDir?: string, options: PiSessionManagerOptions = {}): SessionManager {
    const piOptions = withPiAgentDir(options);
    if (sessionDir === undefined) preparedScope(cwd, piOptions.agentDir, options.onTightened);
    return new SessionManager(GjcSessionManager.create(cwd, absoluteDir(sessionDir), undefined, piOptions));
  }

  /**
   * Opens `filePath` synchronously; new and branched sessions go to `sessionDir` (default its directory), `cwdOverride`
   * replaces the header's cwd for {@link getCwd}. A missing file starts a new session there; a blank one, or one with an
   * unusable header (moved aside first), is replaced by a new session whose header is written at once. A session pi
   * wrote in its own folder (`<agentDir>/sessions/--<cwd>--/`) is copied into its workspace's managed scope first and
   * the copy opened (the source is only read); when that workspace no longer exists it opens read-only, and with a
   * `cwdOverride` it continues as a fork in that directory's scope.
   * @throws StorageError `session_busy` when another writer holds the file; SessionFormatError `version_too_new` / `invalid_version`; MigrationError
   */
  static open(filePath: string, sessionDir?: string, cwdOverride?: string, options: PiSessionManagerOptions = {}): SessionManager {
    if (typeof filePath !== "string" || filePath.length === 0) throw new SessionManagerError("invalid_options", "filePath must be a non-empty string");
    const piOptions = withPiAgentDir(options);
    let file = path.resolve(filePath);
    try {
      file = copyOfLegacyFile(file, piOptions.agentDir, options.onTightened) ?? file;
    } catch (error) {
      if (!(error instanceof ScopeError && error.code === "cwd_missing")) throw error;
      if (cwdOverride !== undefined) return SessionManager.forkFrom(file, cwdOverride, sessionDir, options);
      // Read as pi left it (its folder is 0755), never written: pi asks for a directory and opens again with it.
      const dir = path.dirname(file);
      return new SessionManager(hooks.open(file, dir, new FileSessionStorage(dir), { ...piOptions, readOnly: true }));
    }
    const gjc = SessionManager.#takingOver(file, undefined, () => hooks.open(file, absoluteDir(sessionDir), undefined, piOptions));
    return new SessionManager(gjc, cwdOverride);
  }

  /**
   * Opens the newest usable session of `sessionDir` (default the managed scope of `cwd`, with pi's own sessions of the
   * workspace, copied into it when chosen) that no other process writes, else starts one; what it passed over (busy,
   * refused) goes to `options.onSkipped`, as the main entry's. Synchronous.
   */
  static continueRecent(cwd: string, sessionDir?: string, options: PiSessionManagerOptions = {}): SessionManager {
    const piOptions = withPiAgentDir(options);
    const skipped: SkippedSession[] = [];
    const attempt = (file: string, writable: () => string | undefined): SessionManager | undefined => {
      try {
        const target = writable();
        return target === undefined ? undefined : SessionManager.open(target, sessionDir, undefined, piOptions);
      } catch (error) {
        const skip = resumeSkipOf(file, error);
        if (skip === undefined) throw error;
        skipped.push(skip);
        return undefined;
      }
    };
    let opened: SessionManager | undefined;
    if (sessionDir === undefined) {
      const scope = preparedScope(cwd, piOptions.agentDir, options.onTightened);
      for (const choice of resumeChoices(scope, piOptions.agentDir)) {
        opened = attempt(choice.path, choice.writable);
        if (opened !== undefined) break;
      }
    } else {
      for (const file of recentSessions(path.resolve(sessionDir), piOptions)) {
        if (file.usable()) opened = attempt(file.path, () => file.path);
        if (opened !== undefined) break;
      }
    }
    opened ??= SessionManager.create(cwd, sessionDir, piOptions);
    if (skipped.length > 0) options.onSkipped?.(skipped);
    return opened;
  }

  /**
   * A new session for `targetCwd` in `sessionDir` (default its managed scope) copying every entry of
   * `sourcePath`, its `parentSession`; written before this returns. Synchronous.
   * @throws SessionManagerError `invalid_header` for a missing or empty source, or one without a usable header
   */
  static forkFrom(sourcePath: string, targetCwd: string, sessionDir?: string, options: PiSessionManagerOptions = {}): SessionManager {
    const source = path.resolve(sourcePath);
    if (readSessionRecords(source).length === 0) {
      throw new SessionManagerError("invalid_header", `Cannot fork: ${source} is missing, empty or has no session header`, { path: source });
    }
    const piOptions = withPiAgentDir(options);
    if (sessionDir === undefined) preparedScope(targetCwd, piOptions.agentDir, options.onTightened);
    return new SessionManager(hooks.forkFrom(source, targetCwd, absoluteDir(sessionDir), piOptions, { parentSession: source, writeAtOnce: true }));
  }

  /** A session that never touches the disk. */
  static inMemory(cwd: string = process.cwd()): SessionManager {
    return new SessionManager(GjcSessionManager.inMemory(cwd));
  }

  /**
   * The sessions of `sessionDir`, else the managed scope of `cwd` with pi's own sessions of the workspace not copied
   * yet, newest first, as pi's rows (whole files read). Never writes.
   */
  static async list(cwd: string, sessionDir?: string, onProgress?: ListProgress, options: ListOptions = {}): Promise<SessionInfo[]> {
    const piOptions = withPiAgentDir(options);
    const rows = await GjcSessionManager.list(cwd, absoluteDir(sessionDir), undefined, piOptions).catch((error: unknown) => {
      // pi leaves its agent directory 0755 until our first write makes it owner-only; till then no managed scope can be
      // read below it, and pi's own sessions (read by the legacy rules) are all there is. Reported, as listAll does.
      if (!(sessionDir === undefined && error instanceof ScopeError && error.code === "sessions_root_unavailable")) throw error;
      options.onSkipped?.([{ path: path.join(piOptions.agentDir, "sessions"), code: "unsafe_entry", detail: error.detail }]);
      return [];
    });
    const legacy = sessionDir === undefined ? uncopiedSessions(cwd, piOptions.agentDir).map((c) => ({ path: c.path, mtimeMs: c.identity.mtimeMs })) : [];
    return piInfos(rows, piOptions, onProgress, legacy);
  }

  /** The sessions of every managed scope and those pi wrote in its own folders and not copied yet (each session once), newest first, in pi's row shape. Never writes. */
  static async listAll(onProgress?: ListProgress, options: ListOptions = {}): Promise<SessionInfo[]> {
    const piOptions = withPiAgentDir(options);
    const { onSkipped } = options;
    const inPiFolder = (file: string) => isLegacyFolder(file, piOptions.agentDir) || isLegacyFolder(path.dirname(file), piOptions.agentDir);
    const reported: ListOptions = {
      ...piOptions,
      onSkipped: (skipped) => {
        const rest = skipped.filter((skip) => !inPiFolder(skip.path));
        if (rest.length > 0) onSkipped?.(rest);
      },
    };
    const rows = await GjcSessionManager.listAll(undefined, piOptions.agentDir, reported);
    // pi's folders are read as pi's, below (an owner-only listing refuses their modes): none is listed twice.
    const scoped = rows.filter((row) => !isLegacyFolder(path.dirname(row.path), piOptions.agentDir));
    return piInfos(scoped, piOptions, onProgress, uncopiedLegacyFiles(piOptions.agentDir));
  }

  /** The working directory: the `cwdOverride` of {@link open}, else the header's. */
  getCwd(): string {
    return this.#cwdOverride ?? this.#gjc.getCwd();
  }

  /** The session's name by pi's rule: the latest `session_info` decides, an empty one clears. */
  getSessionName(): string | undefined {
    return hooks.tree(this.#gjc).getSessionInfoName();
  }

  /**
   * Starts a new, empty session in the same directory (with the caller's `id`); the previous file is finished in the background.
   * @returns the new session file, or `undefined` in memory @throws SessionManagerError `invalid_session_id`
   */
  newSession(options: NewSessionOptions = {}): string | undefined {
    const { id, parentSession } = options;
    return hooks.newSession(this.#gjc, defined({ id, parentSession }));
  }

  /**
   * Switches to `sessionFile`, loaded or replaced as by {@link open}; one another pi manager here is on is taken over.
   * @throws StorageError `session_busy` for the file this manager is on (or still finishing), or one another process holds
   */
  setSessionFile(sessionFile: string): void {
    const file = path.resolve(sessionFile);
    SessionManager.#takingOver(file, this, () => hooks.setSessionFile(this.#gjc, file));
  }

  /** Appends a `message` entry: pi-ai's and pi's message types are taken as they are declared. */
  appendMessage(message: PiAppendableMessage): string {
    return this.#gjc.appendMessage(message as AgentMessage);
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
    return hooks.append(this.#gjc, { type: "compaction", summary, firstKeptEntryId, tokensBefore, ...defined({ details, fromHook }) }).id;
  }

  /** Moves the leaf to `branchFromId` (`null`: before the first entry) and appends a `branch_summary` of the path left. @throws SessionTreeError `unknown_entry` */
  branchWithSummary(branchFromId: string | null, summary: string, details?: unknown, fromHook?: boolean): string {
    return hooks.branchWithSummary(this.#gjc, branchFromId, summary, defined({ details, fromHook }));
  }

  /** Appends a `custom` entry (extension state, not in the model context). */
  appendCustomEntry(customType: string, data?: unknown): string {
    return this.#gjc.appendCustomEntry(customType, data);
  }

  /** Appends a `custom_message` (extension text in the model context), without an attribution. */
  appendCustomMessageEntry<T = unknown>(customType: string, content: PiCustomContent, display: boolean, details?: T): string {
    return hooks.append(this.#gjc, { type: "custom_message", customType, content: content as CustomMessageEntry["content"], display, ...defined({ details }) })
      .id;
  }

  /** Appends a `session_info` naming the session (trimmed; an empty name clears it). */
  appendSessionInfo(name: string): string {
    return hooks.append(this.#gjc, sessionInfoDraft(name)).id;
  }

  /** Appends a `label` for `targetId` (`undefined` or `""` clears it). @throws SessionTreeError `unknown_entry` */
  appendLabelChange(targetId: string, label: string | undefined): string {
    return this.#gjc.appendLabelChange(targetId, label);
  }

  /** The session tree, each labelled node with the time its label was set. */
  getTree(): SessionTreeNode[] {
    const labelTimes = new Map<string, string>();
    for (const entry of hooks.tree(this.#gjc).getEntries()) {
      const { targetId, timestamp } = entry as { targetId?: unknown; timestamp?: unknown };
      if (entry.type === "label" && typeof targetId === "string" && typeof timestamp === "string") labelTimes.set(targetId, timestamp);
    }
    const convert = (node: GjcTreeNode): SessionTreeNode => {
      const out: SessionTreeNode = { entry: node.entry, children: node.children.map(convert) };
      if (node.label === undefined) return out;
      const time = labelTimes.get((node.entry as { id?: unknown }).id as string);
      return { ...out, label: node.label, ...defined({ labelTimestamp: time }) };
    };
    return this.#gjc.getTree().map(convert);
  }

  /** What the model sees at the leaf, in pi's shape and by pi's model rule. */
  buildSessionContext(): PiAgentSessionContext {
    const tree = hooks.tree(this.#gjc);
    return buildPiAgentSessionContext(tree.getEntries(), tree.getLeafId(), tree.index);
  }

  /** The latest compaction on the current branch, or `null`. */
  getLatestCompactionEntry(): CompactionEntry | null {
    return getLatestCompactionEntry(this.#gjc.getBranch());
  }

  /** Flushes and releases the file's writer lock (pi never calls it; see the module comment). */
  async close(): Promise<void> {
    live.delete(this.#ref);
    await this.#gjc.close();
  }
}
