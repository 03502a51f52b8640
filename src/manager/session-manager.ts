/**
 * `SessionManager`: one session as an append-only tree in memory, kept on disk as JSONL,
 * driven through GJC 0.15's API (factories, appends returning the new entry's id, tree
 * navigation, session switches).
 *
 * Persistence waits for the first assistant message (a session that never got an answer
 * leaves no file); then the whole session is written atomically, and from there on each
 * entry is one line appended through the held writer: sanitize, externalize large images
 * (blob durable first), one `JSON.stringify`, one write. Nothing is re-read or re-hashed per
 * append. The first persistence failure is latched: every later persisting call throws it,
 * and nothing already in memory is dropped.
 */
import path from "node:path";

import { isValidSessionId, type BlobSink, type SessionHeader } from "../session/index.js";
import { MemorySessionStorage, StorageError, type SessionStorage } from "../storage/index.js";
import { announceSession, openFirstFree } from "./continuation.js";
import {
  resolveFactoryOptions,
  targetOf,
  type MigrationPolicy,
  type SessionDestinationInput,
  type SessionMemoryMode,
} from "./destination.js";
import { SessionManagerError } from "./errors.js";
import {
  resolveOptions,
  type NewSessionOptions,
  type OpenSessionOptions,
  type ResolvedOptions,
  type SessionCloseReport,
  type SessionManagerOptions,
} from "./options.js";
import { SessionEdits } from "./session-edits.js";
import { moveManagedSession } from "./session-move.js";
import { branchedState, copiedState, forkedState, freshState, openedState, type SessionState } from "./session-state.js";
import { selectionDrafts, selectionFromToolNames, type ToolSelectionChange } from "./selection.js";
import { Retirements, StateWriter, type PersistableLine } from "./state-writes.js";
import type { ForkChoices, SynchronousSwitches } from "./internal-hooks.js";

function ignore(): void {}

let synchronous: SynchronousSwitches<SessionManager> | undefined;

const NO_POLICIES = { migrationPolicy: undefined, sessionMemoryMode: undefined } as const;

/** The {@link SynchronousSwitches} of {@link SessionManager} (set when the class is defined). */
export function synchronousSwitches(): SynchronousSwitches<SessionManager> {
  return synchronous!;
}

/** See the module comment. */
export class SessionManager extends SessionEdits {
  #options: ResolvedOptions;
  readonly #persistent: boolean;
  readonly #readOnly: boolean;
  #state: SessionState;
  #closed = false;
  #closeReport: SessionCloseReport = { unpersistedEntries: 0 };
  /** Unwritten entries of sessions this manager switched away from, for the close report. */
  #leftUnwritten = 0;
  readonly #writer = new StateWriter(() => this.#blobSink());
  /** Sessions left by a synchronous switch, being finished; `flush()` and `close()` wait for them. */
  readonly #retiring = new Retirements();

  private constructor(options: ResolvedOptions, persistent: boolean, readOnly: boolean, state: SessionState) {
    super();
    this.#options = options;
    this.#persistent = persistent;
    this.#readOnly = readOnly;
    this.#state = state;
  }

  // ---- factories -------------------------------------------------------------------------

  /**
   * A new persistent session for `cwd` in `destination` (omitted: the managed scope of `cwd`,
   * prepared owner-only). Nothing touches the session file until the first assistant message.
   * @throws SessionManagerError `invalid_options`, `untrusted_destination`,
   *   `managed_storage_unsupported`, `tool_classifier_required`; ScopeError
   */
  static create(cwd: string, destination?: SessionDestinationInput, storage?: SessionStorage, options: SessionManagerOptions = {}): SessionManager {
    const resolved = resolveOptions(targetOf(cwd, destination, storage), options);
    return SessionManager.#fresh(resolved, cwd, options.toolNames);
  }

  /**
   * A session that never persists, with GJC's default cwd (`process.cwd()`). The storage is
   * held, never written.
   * @throws SessionManagerError `tool_classifier_required`
   */
  static inMemory(
    cwd: string = process.cwd(),
    storage: SessionStorage = new MemorySessionStorage({ root: "/" }),
    options: Pick<SessionManagerOptions, "classifyTool" | "now" | "toolNames"> = {},
  ): SessionManager {
    const { classifyTool, now, toolNames } = options;
    const resolved = resolveOptions(
      { sessionDir: storage.root, storage, cwd },
      { terminalId: null, ...(classifyTool === undefined ? {} : { classifyTool }), ...(now === undefined ? {} : { now }) },
    );
    const manager = new SessionManager(resolved, false, false, freshState(resolved, { cwd }, false));
    manager.#applyInitialSelection(toolNames);
    return manager;
  }

  /**
   * Opens the session file `filePath`; without a destination its directory is the explicit
   * session directory. A missing or blank file starts a fresh session at that path; a
   * non-empty file whose header is unusable is first moved aside to a
   * `<name>.invalid-<timestamp>` sibling (see {@link getLoadReport}). v1-v4 files are
   * migrated in memory and rewritten as v5 on the first persisting call. `options.readOnly`
   * loads without the writer lock.
   *
   * @throws StorageError `session_busy` when another writer holds the file (writable open);
   *   SessionFormatError `version_too_new` / `invalid_version` (the file is left untouched);
   *   SessionManagerError `invalid_header` (read-only open only), `invalid_options`
   */
  static async open(
    filePath: string,
    destination?: SessionDestinationInput,
    storage?: SessionStorage,
    migrationPolicy?: MigrationPolicy,
    sessionMemoryMode?: SessionMemoryMode,
    options: OpenSessionOptions = {},
  ): Promise<SessionManager> {
    if (typeof filePath !== "string" || filePath.length === 0) throw new SessionManagerError("invalid_options", "filePath must be a non-empty string");
    const absolute = path.resolve(filePath);
    const policies = { migrationPolicy, sessionMemoryMode };
    const resolved = resolveFactoryOptions(process.cwd(), destination ?? path.dirname(absolute), storage, policies, options);
    return SessionManager.#opened(resolved, absolute, options.readOnly === true);
  }

  /**
   * Resumes the most relevant session of `destination` (omitted: the managed scope of `cwd`):
   * the one this terminal's breadcrumb names when its cwd matches `cwd`, else the most
   * recently modified session no other writer holds, else a new one for `cwd`. What it
   * passed over (busy or refused) goes to `options.onSkipped`; see `openFirstFree`.
   */
  static async continueRecent(
    cwd: string,
    destination?: SessionDestinationInput,
    storage?: SessionStorage,
    migrationPolicy?: MigrationPolicy,
    sessionMemoryMode?: SessionMemoryMode,
    options: SessionManagerOptions = {},
  ): Promise<SessionManager> {
    const resolved = resolveFactoryOptions(cwd, destination, storage, { migrationPolicy, sessionMemoryMode }, options);
    const { opened, skipped } = await openFirstFree(resolved, cwd, (file) => SessionManager.#opened(resolved, file, false));
    const manager = opened ?? SessionManager.#fresh(resolved, cwd, options.toolNames);
    if (skipped.length > 0) options.onSkipped?.(skipped);
    return manager;
  }

  /**
   * A new session for `cwd` in `destination` holding a copy of every line of the session file
   * `sourcePath` (read without locking it). The header's `parentSession` is the source's
   * session id, and the source's title (and its source) is carried over. Written at once
   * when the copy holds an assistant message.
   */
  static async forkFrom(
    sourcePath: string,
    cwd: string,
    destination?: SessionDestinationInput,
    storage?: SessionStorage,
    migrationPolicy?: MigrationPolicy,
    sessionMemoryMode?: SessionMemoryMode,
    options: SessionManagerOptions = {},
  ): Promise<SessionManager> {
    const resolved = resolveFactoryOptions(cwd, destination, storage, { migrationPolicy, sessionMemoryMode }, options);
    return SessionManager.#forked(resolved, sourcePath, cwd, {});
  }

  static #forked(resolved: ResolvedOptions, sourcePath: string, cwd: string, fork: ForkChoices): SessionManager {
    const state = copiedState(resolved, path.resolve(sourcePath), cwd, fork.parentSession);
    const manager = new SessionManager(resolved, true, false, state);
    if (fork.writeAtOnce === true) manager.#writer.enableWriteThrough();
    if (state.hasAssistant || fork.writeAtOnce === true) manager.#writer.start(state);
    manager.#state.persistence?.check();
    return manager;
  }

  static #fresh(resolved: ResolvedOptions, cwd: string, toolNames: readonly string[] | undefined): SessionManager {
    const manager = new SessionManager(resolved, true, false, freshState(resolved, { cwd }, true));
    manager.#applyInitialSelection(toolNames);
    return manager;
  }

  static {
    synchronous = {
      open(filePath, destination, storage, options = {}) {
        const absolute = path.resolve(filePath);
        const resolved = resolveFactoryOptions(process.cwd(), destination ?? path.dirname(absolute), storage, NO_POLICIES, options);
        return SessionManager.#opened(resolved, absolute, options.readOnly === true);
      },
      newSession: (manager, options = {}) => manager.#newSessionNow(options),
      setSessionFile: (manager, sessionFile) => manager.#setSessionFileNow(sessionFile),
      append: (manager, draft, options) => manager.appendDraft(draft, options),
      tree: (manager) => manager.#state.tree,
      writeThrough: (manager) => manager.#writer.enableWriteThrough(),
      branchWithSummary: (manager, branchFromId, summary, options) => manager.branchWithOptions(branchFromId, summary, options),
      forkFrom(sourcePath, cwd, destination, options, fork) {
        const resolved = resolveFactoryOptions(cwd, destination, undefined, NO_POLICIES, options);
        return SessionManager.#forked(resolved, sourcePath, cwd, fork);
      },
      writeReplacedNow(manager) {
        const state = manager.#state;
        const replaced = state.fileExists || state.report.movedAside !== undefined;
        if (manager.#persistent && !state.report.loaded && replaced && !state.active) manager.#writer.start(state);
        state.persistence?.check();
      },
      releaseNow(manager) {
        if (manager.#closed) return true;
        if (manager.#state.persistence?.closeNow() === false) return false;
        manager.#closed = true;
        return true;
      },
    };
  }

  static #opened(resolved: ResolvedOptions, file: string, readOnly: boolean): SessionManager {
    const state = openedState(resolved, file, readOnly, process.cwd());
    if (!readOnly && state.report.loaded) announceSession(resolved, file, state.header.cwd);
    return new SessionManager(resolved, !readOnly, readOnly, state);
  }

  // ---- reading ---------------------------------------------------------------------------

  /** The session file, or `undefined` for an in-memory session. */
  getSessionFile(): string | undefined {
    return this.#persistent || this.#readOnly ? this.#state.file : undefined;
  }

  /** The directory new, branched and forked session files go to; `""` in memory. */
  getSessionDir(): string {
    return this.#persistent || this.#readOnly ? this.#options.sessionDir : "";
  }

  /** Pre-v4 patch records left out of full rewrites so far (they would take effect in a v5 file). */
  getDroppedInertPatchCount(): number {
    return this.#writer.droppedInertPatches;
  }

  /** Whether this manager writes to disk (`false` in memory and for a read-only open). */
  isPersisted(): boolean {
    return this.#persistent;
  }

  // ---- rewrites --------------------------------------------------------------------------

  /**
   * Rewrites the session file now, atomically, from memory (after
   * {@link applyEntryMessageUpdates}). A no-op before the file exists or when not persisting.
   * @throws SessionManagerError `persistence_failed`
   */
  async rewriteEntries(): Promise<void> {
    this.checkWritable();
    const state = this.#state;
    if (!this.#persistent || !(state.active || state.fileExists)) return;
    state.active = true;
    this.#writer.writeAll(state);
    await this.flush();
  }

  // ---- switching sessions ----------------------------------------------------------------

  /**
   * Finishes the current session (flush and release) and starts a new, empty one in the same
   * directory, with the caller's `id` when given.
   * @returns the new session file, or `undefined` in memory
   * @throws SessionManagerError `invalid_session_id`; `persistence_failed` when the current
   *   session could not be finished (the manager then stays on it)
   */
  async newSession(options: NewSessionOptions = {}): Promise<string | undefined> {
    const next = this.#prepareNewSession(options);
    await this.#state.persistence?.close();
    this.#leave(this.#state);
    return this.#enterNewSession(next);
  }

  /** {@link newSession} for the synchronous hooks: the old session is finished in the background. */
  #newSessionNow(options: NewSessionOptions): string | undefined {
    const next = this.#prepareNewSession(options);
    this.#retiring.retire(this.#state);
    this.#leave(this.#state);
    return this.#enterNewSession(next);
  }

  #prepareNewSession(options: NewSessionOptions): { state: SessionState; selection: ToolSelectionChange } {
    this.checkWritable();
    const { id } = options;
    if (id !== undefined && (typeof id !== "string" || !isValidSessionId(id))) {
      throw new SessionManagerError("invalid_session_id", `not a valid session id: ${String(id)}`);
    }
    const selection = selectionFromToolNames(options.toolNames, this.#options.classifyTool);
    const state = freshState(this.#options, { cwd: this.getCwd() || process.cwd(), parentSession: options.parentSession, id }, this.#persistent);
    return { state, selection };
  }

  #enterNewSession(next: { state: SessionState; selection: ToolSelectionChange }): string | undefined {
    this.#state = next.state;
    for (const draft of selectionDrafts(next.selection)) this.appendDraft(draft);
    return this.getSessionFile();
  }

  /**
   * Switches to a new session holding root..`leafId` (label entries left out, then the labels
   * of the copied entries re-added at the end), with the current file as `parentSession`.
   * When persisting, the new file is written before this returns; the previous file is
   * finished in the background ({@link close} waits for it).
   * @returns the new session file, or `undefined` in memory
   * @throws SessionTreeError `unknown_entry`; SessionManagerError `persistence_failed`
   */
  createBranchedSession(leafId: string): string | undefined {
    this.checkWritable();
    const current = this.#state;
    const parentSession = this.#persistent ? current.file : current.header.id;
    const state = branchedState(this.#options, current, leafId, { cwd: this.getCwd() || process.cwd(), parentSession }, this.#persistent);
    this.#retiring.retire(current);
    this.#state = state;
    if (this.#persistent) this.#writer.writeNow(state);
    return this.getSessionFile();
  }

  /**
   * Copies the whole session to a new file (new id, `parentSession` = the old id, title
   * kept) and switches to it.
   * @returns both paths, or `undefined` when not persisting
   */
  async fork(): Promise<{ oldSessionFile: string; newSessionFile: string } | undefined> {
    this.checkWritable();
    if (!this.#persistent) return undefined;
    const current = this.#state;
    const state = forkedState(this.#options, current, this.getCwd() || process.cwd());
    await current.persistence?.close();
    this.#state = state;
    this.#writer.writeNow(state);
    await this.flush();
    return { oldSessionFile: current.file!, newSessionFile: state.file! };
  }

  /**
   * Switches this manager to the session file `sessionFile` (reached through this manager's
   * storage), closing the current one. An existing session is loaded with the same checks as
   * {@link open}; a missing, blank or moved-aside file gets a fresh session whose header is
   * written at once. When the new file cannot be opened the manager stays where it was.
   * @throws what {@link open} throws
   */
  async setSessionFile(sessionFile: string): Promise<void> {
    this.checkWritable();
    const absolute = path.resolve(sessionFile);
    const current = this.#state;
    if (absolute === current.file) await current.persistence?.close();
    const state = openedState(this.#options, absolute, false, this.getCwd() || process.cwd());
    if (absolute !== current.file) await current.persistence?.close();
    this.#leave(current);
    this.#enterFile(state);
    if (!state.report.loaded) await this.flush();
  }

  /**
   * {@link setSessionFile} for the synchronous hooks: the old session is finished in the
   * background, and a fresh session's header write is queued (appends queue behind it).
   * Switching to the file this manager holds, or to one it is still finishing (until
   * {@link flush} or {@link close} waited for it), is `session_busy`.
   */
  #setSessionFileNow(sessionFile: string): void {
    this.checkWritable();
    const absolute = path.resolve(sessionFile);
    if (absolute === this.#state.file || this.#retiring.has(absolute)) {
      throw new StorageError("session_busy", `${absolute} is still being written by this manager`, { path: absolute });
    }
    const state = openedState(this.#options, absolute, false, this.getCwd() || process.cwd());
    this.#retiring.retire(this.#state);
    this.#leave(this.#state);
    this.#enterFile(state);
  }

  /** Counts what a switch leaves unwritten (its session never got a file), for {@link close}. */
  #leave(state: SessionState): void {
    if (this.#persistent) this.#leftUnwritten += this.#writer.deferredLines(state);
  }

  #enterFile(state: SessionState): void {
    this.#state = state;
    if (state.report.loaded) announceSession(this.#options, state.file!, state.header.cwd);
    else if (this.#persistent && !state.active) this.#writer.start(state);
  }

  /**
   * Moves the session to the workspace `newCwd` and records it in the header. A managed
   * session's file moves to the managed scope of `newCwd`: the complete file is published
   * there first (durable, never replacing a file), then the old one is removed, so a crash at
   * any point leaves the session whole in at least one scope. An explicit-directory session
   * stays in its directory. The same cwd is a no-op.
   * @throws ScopeError for an unusable `newCwd`; SessionManagerError `persistence_failed`
   */
  async moveTo(newCwd: string): Promise<void> {
    this.checkWritable();
    if (typeof newCwd !== "string" || newCwd.length === 0) throw new SessionManagerError("invalid_options", "newCwd must be a non-empty string");
    const state = this.#state;
    if (newCwd === state.header.cwd) return;
    const header: SessionHeader = { ...state.header, cwd: newCwd };
    if (!this.#persistent || !this.#options.managed) {
      state.header = header;
      if (this.#persistent && state.active) await this.rewriteEntries();
      return;
    }
    this.#options = await moveManagedSession(state, this.#options, header, this.#blobSink(), (count) => {
      this.#writer.addDroppedInertPatches(count);
    });
  }

  // ---- durability ------------------------------------------------------------------------

  /**
   * Writes the whole session now, even before any assistant message (a host that must list
   * the session at once). A no-op in memory, read-only, or once the file is written.
   * @throws SessionManagerError `persistence_failed`
   */
  async ensureOnDisk(): Promise<void> {
    this.checkOpen();
    if (!this.#persistent) return;
    this.checkWritable();
    if (!this.#state.active) this.#writer.start(this.#state);
    await this.flush();
  }

  /**
   * Waits for queued writes and syncs the file, and waits for sessions left by synchronous
   * switches to be finished. Before the first assistant message there is no file and nothing
   * to do.
   * @throws SessionManagerError `persistence_failed`, `closed`
   */
  async flush(): Promise<void> {
    this.checkOpen();
    await this.#state.persistence?.flush();
    await this.#retiring.settled();
  }

  /**
   * Performs a rewrite still owed, flushes, closes the file and releases its writer lock, and
   * waits for sessions left by synchronous switches. Idempotent; later calls other than reads
   * throw `closed`. Rethrows a latched failure after releasing the file.
   * @returns the {@link SessionCloseReport} (the same one on every later call)
   */
  async close(): Promise<SessionCloseReport> {
    if (this.#closed) return this.#closeReport;
    const state = this.#state;
    if (this.#persistent && state.active && state.fullWritePending) this.#writer.writeAll(state);
    this.#closed = true;
    this.#closeReport = { unpersistedEntries: this.#leftUnwritten + (this.#persistent ? this.#writer.deferredLines(state) : 0) };
    const persistence = state.persistence;
    if (persistence !== undefined) {
      await persistence.flush().catch(ignore);
      await persistence.close();
    }
    await this.#retiring.settled();
    return this.#closeReport;
  }

  // ---- internals -------------------------------------------------------------------------

  /** {@inheritDoc SessionReader.current} */
  protected current(): SessionState {
    return this.#state;
  }

  #applyInitialSelection(toolNames: readonly string[] | undefined): void {
    const change = selectionFromToolNames(toolNames, this.#options.classifyTool);
    for (const draft of selectionDrafts(change)) this.appendDraft(draft);
  }

  /** {@inheritDoc SessionEdits.persistLine} */
  protected persistLine(line: PersistableLine): void {
    if (this.#persistent) this.#writer.persistLine(this.#state, line);
  }

  /** {@inheritDoc SessionEdits.now} */
  protected now(): Date {
    return this.#options.now();
  }

  #blobSink(): BlobSink | undefined {
    const blobs = this.#options.blobStore;
    return blobs === undefined ? undefined : (bytes) => void blobs.putSync(bytes);
  }

  /** {@inheritDoc SessionEdits.checkOpen} */
  protected checkOpen(): void {
    if (this.#closed) throw new SessionManagerError("closed", "the session manager is closed");
  }

  /** {@inheritDoc SessionEdits.checkWritable} */
  protected checkWritable(): void {
    this.checkOpen();
    if (this.#readOnly) throw new SessionManagerError("read_only", "the session was opened read-only", { path: this.#state.file });
    this.#state.persistence?.check();
  }
}
