/**
 * `SessionManager`: one session as an append-only tree in memory, kept on disk as JSONL.
 *
 * Every `append*` updates memory first and returns the new entry. Persistence waits for the
 * first assistant message (a session that never got an answer leaves no file); then the
 * whole session is written atomically, and from there on each entry is one line appended
 * through the held writer: sanitize, externalize large images (blob durable first), one
 * `JSON.stringify`, one write. Nothing is re-read or re-hashed per append. The first
 * persistence failure is latched: every later persisting call throws it, and nothing already
 * in memory is dropped.
 */
import path from "node:path";

import {
  buildSessionContext,
  SessionTree,
  type BlobSink,
  type BranchSummaryEntry,
  type EntryDraft,
  type FileEntry,
  type LabelEntry,
  type SessionContext,
  type SessionEntry,
  type SessionHeader,
  type SessionTreeNode,
  type AppendedEntry,
} from "../session/index.js";
import { MemorySessionStorage } from "../storage/index.js";
import { canonicalizeTrustedPath, defaultAgentDir, SESSIONS_DIRECTORY } from "../scope/resolve.js";
import { managedSessionDirForRead } from "../scope/session-defaults.js";
import { announceSession, findContinuation } from "./continuation.js";
import { listAll, listSessions, type DiscoveryOptions, type SessionListing } from "./discovery.js";
import { SessionManagerError } from "./errors.js";
import { linesFromLoad, persistedLineText, serializeManagedLines, type ManagedLine } from "./lines.js";
import { openSessionFile, type SessionLoadReport } from "./open-file.js";
import {
  resolveOptions,
  type ManagedDefaultOptions,
  type NewSessionOptions,
  type ResolvedOptions,
  type SessionManagerOptions,
} from "./options.js";
import { SessionPersistence } from "./persistence.js";
import { freshState, isAssistantMessage, persistenceTarget, type SessionState } from "./session-state.js";
import { EntryAppender } from "./appender.js";
import { selectionDrafts, selectionFromToolNames, type ToolSelectionChange, type ToolSelectionState } from "./selection.js";
import { sanitizeSessionTitle, titleMayReplace, type TitleSource } from "./title.js";

/** Options of {@link SessionManager.open}. */
export interface OpenSessionOptions extends SessionManagerOptions {
  /**
   * Load without taking the writer lock and never write: works while another process is
   * writing the file. Mutating calls throw `read_only`.
   */
  readOnly?: boolean;
  /** The cwd of the fresh session started when the file is missing, blank or moved aside. */
  cwd?: string;
}

/** Options of {@link SessionManager.continueRecent}. */
export interface ContinueRecentOptions extends Omit<SessionManagerOptions, "sessionDir">, NewSessionOptions {
  /** The working directory a breadcrumb must match; also the cwd of a fresh session. */
  cwd: string;
}

/** Options of {@link SessionManager.list} and {@link SessionManager.listAll}. */
export interface ManagedListOptions extends DiscoveryOptions {
  /** Workspace whose managed scope is listed; default `process.cwd()`. */
  cwd?: string;
  /** Agent directory; default `defaultAgentDir()`. */
  agentDir?: string;
  /** Explicit session directory: listed as is, no scope derived. */
  sessionDir?: string;
}

/** Options of {@link SessionManager.forkFrom}. */
export interface ForkOptions extends SessionManagerOptions {
  /** The cwd of the fork; default the source's. */
  cwd?: string;
}

/** Options of {@link SessionManager.inMemory}. */
export interface InMemoryOptions extends NewSessionOptions {
  classifyTool?: SessionManagerOptions["classifyTool"];
  now?: () => Date;
}

/** A replacement for one entry, or `undefined` to keep it; see {@link SessionManager.rewriteEntries}. */
export type EntryRewrite = (entry: FileEntry) => FileEntry | undefined;

/** See the module comment. */
export class SessionManager extends EntryAppender {
  readonly #options: ResolvedOptions;
  readonly #persistent: boolean;
  readonly #readOnly: boolean;
  #state: SessionState;
  #closed = false;
  #droppedInertPatches = 0;

  private constructor(options: ResolvedOptions, persistent: boolean, readOnly: boolean, state: SessionState) {
    super();
    this.#options = options;
    this.#persistent = persistent;
    this.#readOnly = readOnly;
    this.#state = state;
  }

  // ---- factories -------------------------------------------------------------------------

  /**
   * A new persistent session in `sessionDir` (omitted: the managed scope of `cwd`). Nothing
   * touches the session file until the first assistant message.
   * @throws SessionManagerError `invalid_options`, `tool_classifier_required`; ScopeError
   */
  static create(options: ManagedDefaultOptions & NewSessionOptions): SessionManager {
    const resolved = resolveOptions(options);
    const manager = new SessionManager(resolved, true, false, freshState(resolved, options, true));
    manager.#applyInitialSelection(options.toolNames);
    return manager;
  }

  /**
   * A non-persistent session kept in a {@link MemorySessionStorage}; nothing is ever written.
   * @throws SessionManagerError `tool_classifier_required`
   */
  static inMemory(options: InMemoryOptions = {}): SessionManager {
    const storage = new MemorySessionStorage({ root: "/" });
    const resolved = resolveOptions({ sessionDir: "/sessions", storage, terminalId: null, ...pick(options) });
    const manager = new SessionManager(resolved, false, false, freshState(resolved, options, false));
    manager.#applyInitialSelection(options.toolNames);
    return manager;
  }

  /**
   * Opens the session file `file` (below `sessionDir`). A missing or blank file starts a fresh
   * session at that path; a non-empty file whose header is unusable is first moved aside to a
   * `<name>.invalid-<timestamp>` sibling (see {@link getLoadReport}). v1-v4 files are migrated
   * in memory and rewritten as v5 on the first persisting call. Nothing is appended on open.
   *
   * @throws StorageError `session_busy` when another writer holds the file (writable open);
   *   SessionFormatError `version_too_new` / `invalid_version` (the file is left untouched);
   *   SessionManagerError `invalid_header` (read-only open only), `invalid_options`
   */
  static async open(file: string, options: OpenSessionOptions): Promise<SessionManager> {
    const resolved = resolveOptions(options);
    const readOnly = options.readOnly === true;
    const absolute = path.resolve(resolved.sessionDir, file);
    const opened = await openSessionFile(resolved.storage, absolute, {
      readOnly,
      lookup: resolved.blobStore?.lookup() ?? (() => undefined),
      now: resolved.now,
    });
    if (opened.loaded === undefined) {
      const state = freshState(resolved, { cwd: options.cwd ?? process.cwd() }, !readOnly, absolute);
      state.report = opened.report;
      state.fileExists = opened.writer !== undefined;
      if (state.persistence !== undefined && opened.writer !== undefined) {
        state.persistence = new SessionPersistence(persistenceTarget(resolved, absolute, () => state.header.cwd), opened.writer);
      }
      return new SessionManager(resolved, !readOnly, readOnly, state);
    }
    const tree = new SessionTree(opened.entries, { now: resolved.now });
    const hasAssistant = opened.entries.some(isAssistantMessage);
    const state: SessionState = {
      header: opened.loaded.header,
      tree,
      lines: linesFromLoad(opened.loaded, opened.entries),
      file: absolute,
      persistence: readOnly
        ? undefined
        : new SessionPersistence(persistenceTarget(resolved, absolute, () => opened.loaded?.header.cwd), opened.writer),
      active: hasAssistant,
      fullWritePending: opened.loaded.migratedFrom !== null,
      fileExists: true,
      hasAssistant,
      report: opened.report,
    };
    if (!readOnly) announceSession(resolved, absolute, state.header.cwd);
    return new SessionManager(resolved, !readOnly, readOnly, state);
  }

  /**
   * Resumes the most relevant session of `sessionDir` (`undefined`: the managed scope of
   * `cwd`): the one this terminal's breadcrumb names when its cwd matches `cwd`, else the
   * most recently modified session, else a new one.
   */
  static async continueRecent(sessionDir: string | undefined, options: ContinueRecentOptions): Promise<SessionManager> {
    const resolved = resolveOptions({ ...options, sessionDir });
    const target = { ...options, sessionDir: resolved.sessionDir, storage: resolved.storage, agentDir: resolved.agentDir };
    const file = await findContinuation(resolved, options.cwd);
    if (file !== undefined) return SessionManager.open(file, target);
    return SessionManager.create(target);
  }

  /**
   * The sessions of one workspace, newest first: those in `sessionDir` when given, else in
   * the managed scope of `cwd` (default `process.cwd()`) under `agentDir`. Never writes; a
   * scope that does not exist yet lists as empty. Legacy-layout sessions are listed by
   * `listSessionCandidates`.
   */
  static async list(options: ManagedListOptions = {}): Promise<SessionListing> {
    const { cwd, agentDir, sessionDir, ...discovery } = options;
    const dir = sessionDir ?? managedSessionDirForRead(cwd ?? process.cwd(), agentDir);
    return dir === undefined ? { sessions: [], skipped: [] } : listSessions(dir, discovery);
  }

  /**
   * The sessions of every workspace scope: those below `sessionsRoot` when given, else below
   * `<agentDir>/sessions` (default agent directory when omitted). Never writes.
   */
  static async listAll(options: Omit<ManagedListOptions, "cwd" | "sessionDir"> & { sessionsRoot?: string } = {}): Promise<SessionListing> {
    const { agentDir, sessionsRoot, ...discovery } = options;
    return listAll(sessionsRoot ?? path.join(canonicalizeTrustedPath(agentDir ?? defaultAgentDir()), SESSIONS_DIRECTORY), discovery);
  }

  /**
   * A new session in `sessionDir` holding a copy of every line of the session file `source`
   * (read without locking it); `parentSession` records the source path. Written at once when
   * the copy holds an assistant message.
   */
  static async forkFrom(source: string, options: ForkOptions): Promise<SessionManager> {
    const resolved = resolveOptions(options);
    const sourceStorage = resolveOptions({ ...options, sessionDir: path.dirname(path.resolve(source)), storage: undefined }).storage;
    const opened = await openSessionFile(sourceStorage, path.resolve(source), {
      readOnly: true,
      lookup: resolved.blobStore?.lookup() ?? (() => undefined),
      now: resolved.now,
    });
    const cwd = options.cwd ?? opened.loaded?.header.cwd ?? process.cwd();
    const state = freshState(resolved, { cwd, parentSession: path.resolve(source) }, true);
    if (opened.loaded !== undefined) {
      state.lines = linesFromLoad(opened.loaded, opened.entries);
      state.tree = new SessionTree(opened.entries, { now: resolved.now });
      state.hasAssistant = opened.entries.some(isAssistantMessage);
    }
    const manager = new SessionManager(resolved, true, false, state);
    if (state.hasAssistant) manager.#startPersistence();
    return manager;
  }

  // ---- reading ---------------------------------------------------------------------------

  /** The session file, or `undefined` for an in-memory session. */
  getSessionFile(): string | undefined {
    return this.#persistent || this.#readOnly ? this.#state.file : undefined;
  }

  /** The session id. */
  getSessionId(): string {
    return this.#state.header.id;
  }

  /** The effective header (migrated, header patches applied). */
  getHeader(): SessionHeader {
    return this.#state.header;
  }

  /** Every non-header entry in insertion order (a live, read-only view). */
  getEntries(): readonly FileEntry[] {
    return this.#state.tree.getEntries();
  }

  /** The entry with `id`. */
  getEntry(id: string): FileEntry | undefined {
    return this.#state.tree.getEntry(id);
  }

  /** The session tree, children in file order. */
  getTree(): SessionTreeNode[] {
    return this.#state.tree.getTree();
  }

  /** The current leaf id; `null` after {@link resetLeaf}. */
  getLeafId(): string | null {
    return this.#state.tree.getLeafId();
  }

  /** The resolved label of an entry. */
  getLabel(id: string): string | undefined {
    return this.#state.tree.getLabel(id);
  }

  /** What the model sees at the current leaf. */
  buildSessionContext(): SessionContext {
    const { tree } = this.#state;
    return buildSessionContext(tree.getEntries(), tree.getLeafId(), tree.index);
  }

  /** The discovery selection state at the current leaf, rebuilt from entries (nothing appended). */
  getToolSelection(): ToolSelectionState {
    const context = this.buildSessionContext();
    return { mcp: context.hasPersistedMCPToolSelection ? context.selectedMCPToolNames : undefined, discoveredBuiltin: context.selectedDiscoveredBuiltinToolNames };
  }

  /** What opening the file found (moved-aside file, invalid lines, migration, unresolved blobs). */
  getLoadReport(): SessionLoadReport {
    return this.#state.report;
  }

  /** Pre-v4 patch records left out of full rewrites so far (they would take effect in a v5 file). */
  getDroppedInertPatchCount(): number {
    return this.#droppedInertPatches;
  }

  /** Whether this manager writes to disk. */
  isPersistent(): boolean {
    return this.#persistent;
  }

  // ---- tree moves ------------------------------------------------------------------------

  /** Moves the leaf to `entryId`; nothing is written. @throws SessionTreeError `unknown_entry` */
  branch(entryId: string): void {
    this.#checkOpen();
    this.#state.tree.branch(entryId);
  }

  /** Clears the leaf: the next append starts a new root. */
  resetLeaf(): void {
    this.#checkOpen();
    this.#state.tree.resetLeaf();
  }

  /**
   * Moves the leaf to `branchFromId` (`null`: before the first entry) and appends a
   * `branch_summary` of the path that was left.
   * @throws SessionTreeError `unknown_entry`
   */
  branchWithSummary(
    branchFromId: string | null,
    summary: string,
    options: { details?: unknown; fromExtension?: boolean } = {},
  ): BranchSummaryEntry {
    this.#checkWritable();
    const entry = this.#state.tree.branchWithSummary(branchFromId, summary, options);
    this.#recordEntry(entry);
    return entry;
  }

  /** Appends a `label` entry for `targetId` (`undefined` clears). @throws SessionTreeError `unknown_entry` */
  appendLabelChange(targetId: string, label: string | undefined): LabelEntry {
    this.#checkWritable();
    const entry = this.#state.tree.appendLabel(targetId, label);
    this.#recordEntry(entry);
    return entry;
  }

  /**
   * A combined selection activation: the MCP entry first, the discovered built-in entry
   * second, sharing one `mutationCorrelationId` when both are present.
   */
  applyToolSelection(change: ToolSelectionChange): SessionEntry[] {
    this.#checkWritable();
    return selectionDrafts(change).map((draft) => this.appendDraft(draft));
  }

  // ---- header ----------------------------------------------------------------------------

  /**
   * Sets the session title through an appended `header_patch`. The name is sanitized (see
   * `sanitizeSessionTitle`); an automatic title never replaces a user's.
   * @returns false when an automatic title was ignored because the user set one
   * @throws SessionManagerError `invalid_title` when nothing printable is left
   */
  setSessionName(name: string, source: TitleSource = "user"): boolean {
    this.#checkWritable();
    const title = sanitizeSessionTitle(name);
    if (title.length === 0) throw new SessionManagerError("invalid_title", "the session name is empty after sanitizing");
    const state = this.#state;
    if (!titleMayReplace(state.header.titleSource, source)) return false;
    state.header = { ...state.header, title, titleSource: source };
    const line: Extract<ManagedLine, { kind: "patch" }> = {
      kind: "patch",
      record: { type: "header_patch", patch: { title, titleSource: source } },
      state: "applied",
    };
    state.lines.push(line);
    this.#persistLine(line);
    return true;
  }

  // ---- rewrites --------------------------------------------------------------------------

  /**
   * Replaces entries in place and, when the session has a file, rewrites it atomically.
   * `transform` sees every entry in file order and returns a replacement (same `id` and
   * `parentId`) or `undefined` to keep it. Invalid lines and unknown records survive (see
   * `lines.ts`). The leaf stays where it was.
   * @returns how many entries were replaced
   * @throws SessionManagerError `invalid_rewrite`, `persistence_failed`
   */
  async rewriteEntries(transform: EntryRewrite): Promise<number> {
    this.#checkWritable();
    const state = this.#state;
    const replaced = new Map<FileEntry, FileEntry>();
    for (const entry of state.tree.getEntries()) {
      const next = transform(entry);
      if (next === undefined || next === entry) continue;
      if (typeof next !== "object" || next === null || next.id !== entry.id || next.parentId !== entry.parentId) {
        throw new SessionManagerError("invalid_rewrite", "a rewrite must keep each entry's id and parentId");
      }
      replaced.set(entry, next);
    }
    if (replaced.size === 0) return 0;
    const leaf = state.tree.getLeafId();
    const tree = new SessionTree(
      state.tree.getEntries().map((entry) => replaced.get(entry) ?? entry),
      { now: this.#options.now },
    );
    if (leaf === null) tree.resetLeaf();
    else tree.branch(leaf);
    state.tree = tree;
    state.lines = state.lines.map((line) => {
      if (line.kind !== "entry") return line;
      const next = replaced.get(line.entry);
      return next === undefined ? line : { kind: "entry", entry: next };
    });
    state.hasAssistant = tree.getEntries().some(isAssistantMessage);
    if (this.#persistent && (state.active || state.fileExists)) {
      state.active = true;
      this.#writeAll();
      await this.flush();
    }
    return replaced.size;
  }

  // ---- switching sessions ----------------------------------------------------------------

  /**
   * Finishes the current session (flush and release) and starts a new, empty one in the same
   * directory.
   * @throws SessionManagerError `persistence_failed` when the current session could not be
   *   finished; the manager then stays on it
   */
  async newSession(options: NewSessionOptions = {}): Promise<void> {
    this.#checkWritable();
    const selection = selectionFromToolNames(options.toolNames, this.#options.classifyTool);
    await this.#state.persistence?.close();
    const cwd = options.cwd ?? this.#state.header.cwd ?? process.cwd();
    this.#state = freshState(this.#options, { ...options, cwd }, this.#persistent);
    for (const draft of selectionDrafts(selection)) this.appendDraft(draft);
  }

  /**
   * Starts a new session holding a copy of the path from the root to `leafId` (default: the
   * current leaf), with the current file (or session id) as `parentSession`, and switches to
   * it. Written at once when the path holds an assistant message.
   * @returns the new session file, or `undefined` in memory
   * @throws SessionTreeError `unknown_entry`; SessionManagerError `persistence_failed`
   */
  async createBranchedSession(leafId: string | null = this.getLeafId()): Promise<string | undefined> {
    this.#checkWritable();
    const current = this.#state;
    const pathEntries = leafId === null ? [] : current.tree.getPath(leafId);
    await current.persistence?.close();
    const parentSession = current.file !== undefined && this.#persistent ? current.file : current.header.id;
    const cwd = current.header.cwd ?? process.cwd();
    const state = freshState(this.#options, { cwd, parentSession }, this.#persistent);
    state.tree = new SessionTree(pathEntries, { now: this.#options.now });
    state.lines.push(...pathEntries.map((entry): ManagedLine => ({ kind: "entry", entry })));
    state.hasAssistant = pathEntries.some(isAssistantMessage);
    this.#state = state;
    if (state.hasAssistant) this.#startPersistence();
    return this.getSessionFile();
  }

  // ---- durability ------------------------------------------------------------------------

  /**
   * Waits for queued writes and syncs the file. Before the first assistant message there is no
   * file and nothing to do.
   * @throws SessionManagerError `persistence_failed`, `closed`
   */
  async flush(): Promise<void> {
    this.#checkOpen();
    await this.#state.persistence?.flush();
  }

  /**
   * Flushes, closes the file and releases its writer lock. Idempotent; later calls other than
   * reads throw `closed`. Rethrows a latched failure after releasing the file.
   */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    const persistence = this.#state.persistence;
    if (persistence === undefined) return;
    await persistence.flush().catch(() => undefined);
    await persistence.close();
  }

  // ---- internals -------------------------------------------------------------------------

  /** {@inheritDoc EntryAppender.appendDraft} */
  protected appendDraft<D extends EntryDraft>(draft: D): AppendedEntry<D> {
    this.#checkWritable();
    const entry = this.#state.tree.append(draft);
    this.#recordEntry(entry);
    return entry;
  }

  #applyInitialSelection(toolNames: readonly string[] | undefined): void {
    const change = selectionFromToolNames(toolNames, this.#options.classifyTool);
    for (const draft of selectionDrafts(change)) this.appendDraft(draft);
  }

  #recordEntry(entry: FileEntry): void {
    const line: Extract<ManagedLine, { kind: "entry" }> = { kind: "entry", entry };
    const state = this.#state;
    state.lines.push(line);
    if (!state.hasAssistant && isAssistantMessage(entry)) state.hasAssistant = true;
    this.#persistLine(line);
  }

  /** Persists a line that was just added to memory, or defers it (see the module comment). */
  #persistLine(line: Extract<ManagedLine, { kind: "entry" | "patch" }>): void {
    const state = this.#state;
    if (!this.#persistent || state.persistence === undefined) return;
    if (!state.active) {
      if (state.hasAssistant) this.#startPersistence();
      return;
    }
    if (state.fullWritePending) {
      this.#writeAll();
      return;
    }
    try {
      state.persistence.append(persistedLineText(line, this.#blobSink()));
    } catch (error) {
      state.persistence.fail(error);
    }
  }

  #startPersistence(): void {
    this.#state.active = true;
    this.#writeAll();
  }

  /** Queues an atomic write of the whole session; applied patches are folded from now on. */
  #writeAll(): void {
    const state = this.#state;
    const persistence = state.persistence;
    if (persistence === undefined) return;
    try {
      const serialized = serializeManagedLines(state.header, state.lines, this.#blobSink());
      this.#droppedInertPatches += serialized.droppedInertPatches;
      persistence.writeAll(serialized.bytes, { replaceExisting: state.fileExists });
      state.lines = state.lines.filter((line) => line.kind !== "patch" || line.state === "skipped");
      state.fullWritePending = false;
      state.fileExists = true;
    } catch (error) {
      persistence.fail(error);
    }
  }

  #blobSink(): BlobSink | undefined {
    const blobs = this.#options.blobStore;
    return blobs === undefined ? undefined : (bytes) => void blobs.putSync(bytes);
  }

  #checkOpen(): void {
    if (this.#closed) throw new SessionManagerError("closed", "the session manager is closed");
  }

  #checkWritable(): void {
    this.#checkOpen();
    if (this.#readOnly) throw new SessionManagerError("read_only", "the session was opened read-only", { path: this.#state.file });
    this.#state.persistence?.check();
  }
}

function pick(options: InMemoryOptions): Partial<SessionManagerOptions> {
  const out: Partial<SessionManagerOptions> = {};
  if (options.classifyTool !== undefined) out.classifyTool = options.classifyTool;
  if (options.now !== undefined) out.now = options.now;
  return out;
}
