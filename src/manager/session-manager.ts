/**
 * `SessionManager`: one session as an append-only tree in memory, kept on disk as JSONL,
 * through GJC 0.15's API. Nothing is written before the first assistant message; then the whole
 * session atomically, and from there each entry is one line appended through the held writer.
 * The first persistence failure is latched, and nothing in memory is dropped.
 */
import path from "node:path";

import {
  checkEntryBounds,
  isValidSessionId,
  type AppendedEntry,
  type AppendOptions,
  type BlobSink,
  type BranchSummaryOptions,
  type EntryDraft,
  type FileEntry,
  type SessionHeader,
} from "../session/index.js";
import { FileSessionStorage, ManagedSessionStorage, MemorySessionStorage, StorageError, type SessionStorage } from "../storage/index.js";
import { announceSession, openFirstFree } from "./continuation.js";
import { resolveFactoryOptions, targetOf, type MigrationPolicy, type Policies, type SessionDestinationInput, type SessionMemoryMode } from "./destination.js";
import { defined } from "./appender.js";
import { SessionManagerError } from "./errors.js";
import {
  resolveOptions,
  type NewSessionOptions,
  type OpenSessionOptions,
  type ResolvedOptions,
  type SessionCloseReport,
  type SessionManagerOptions,
} from "./options.js";
import { isAssistantMessage, type ManagedLine } from "./lines.js";
import { SessionDirectories } from "./session-directories.js";
import { branchedState, copiedState, forkedState, freshState, openedState, replacePayloads, type SessionState } from "./session-state.js";
import { selectionDrafts, selectionFromToolNames, type ToolSelectionChange } from "./selection.js";
import { StateWriter, type PersistableLine } from "./state-writes.js";
import { sanitizeSessionTitle, titleMayReplace, type TitleSource } from "./title.js";
import type { ForkChoices, SuccessorPlan, SynchronousSwitches } from "./internal-hooks.js";

function ignore(): void {}

let synchronous: SynchronousSwitches<SessionManager> | undefined;

const NO_POLICIES: Policies = { migrationPolicy: undefined, sessionMemoryMode: undefined };

/** The {@link SynchronousSwitches} of {@link SessionManager} (set when the class is defined). */
export function synchronousSwitches(): SynchronousSwitches<SessionManager> {
  return synchronous!;
}

/** See the module comment. */
export class SessionManager extends SessionDirectories {
  #options: ResolvedOptions;
  readonly #persistent: boolean;
  readonly #readOnly: boolean;
  #state: SessionState;
  #closed = false;
  #closeReport: SessionCloseReport = { unpersistedEntries: 0 };
  /** Unwritten entries of sessions this manager switched away from, for the close report. */
  #leftUnwritten = 0;
  /** Also finishes the sessions a synchronous switch left; `flush()` and `close()` wait for them. */
  readonly #writer = new StateWriter(() => this.#blobSink());

  private constructor(options: ResolvedOptions, persistent: boolean, readOnly: boolean, state: SessionState) {
    super();
    this.#options = options;
    this.#persistent = persistent;
    this.#readOnly = readOnly;
    this.#state = state;
  }

  /**
   * A new persistent session for `cwd` in `destination` (default: the managed scope of `cwd`). @throws ScopeError;
   *   SessionManagerError `invalid_options`, `untrusted_destination`, `managed_storage_unsupported`, `tool_classifier_required`
   */
  static create(cwd: string, destination?: SessionDestinationInput, storage?: SessionStorage, options: SessionManagerOptions = {}): SessionManager {
    const resolved = resolveOptions(targetOf(cwd, destination, storage), options);
    return SessionManager.#fresh(resolved, cwd, options.toolNames);
  }

  /** A session that never persists; the storage is held, never written. @throws SessionManagerError `tool_classifier_required` */
  static inMemory(
    cwd: string = process.cwd(),
    storage: SessionStorage = new MemorySessionStorage({ root: "/" }),
    options: Pick<SessionManagerOptions, "classifyTool" | "now" | "toolNames"> = {},
  ): SessionManager {
    const { classifyTool, now, toolNames } = options;
    const resolved = resolveOptions({ sessionDir: storage.root, storage, cwd }, { terminalId: null, ...defined({ classifyTool, now }) });
    return SessionManager.#fresh(resolved, cwd, toolNames, false);
  }

  /**
   * Opens the session file `filePath` (default destination: its directory, explicit). A missing or blank file starts a
   * fresh session there; one with an unusable header is moved aside first (see {@link getLoadReport}); v1-v4 are migrated
   * and rewritten as v5 on the first persisting call. `options.readOnly` loads without the writer lock.
   * @throws StorageError `session_busy`; SessionFormatError `version_too_new` / `invalid_version`; SessionManagerError `invalid_header` (read-only), `invalid_options`
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
    return SessionManager.#openPath(filePath, destination, storage, { migrationPolicy, sessionMemoryMode }, options);
  }

  static #openPath(
    filePath: string,
    destination: SessionDestinationInput | undefined,
    storage: SessionStorage | undefined,
    policies: Policies,
    options: OpenSessionOptions,
  ): SessionManager {
    const absolute = path.resolve(filePath);
    const resolved = resolveFactoryOptions(process.cwd(), destination ?? path.dirname(absolute), storage, policies, options);
    return SessionManager.#opened(resolved, absolute, options.readOnly === true);
  }

  /**
   * Resumes the session of `destination` (default: the managed scope of `cwd`) this terminal's breadcrumb names for `cwd`,
   * else the newest one no other writer holds, else a new one; what it passed over (busy, refused) goes to `options.onSkipped`.
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

  /** A new session for `cwd` copying every line of `sourcePath` (read unlocked), parented to its id, with its title; written at once when it holds an answer. */
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
    const state = copiedState(resolved, path.resolve(sourcePath), cwd, fork.parentSession, fork.id);
    const manager = new SessionManager(resolved, true, false, state);
    if (fork.writeAtOnce === true) manager.#writer.enableWriteThrough();
    if (state.hasAssistant || fork.writeAtOnce === true) manager.#writer.start(state);
    manager.#state.persistence?.check();
    return manager;
  }

  static #fresh(resolved: ResolvedOptions, cwd: string, toolNames: readonly string[] | undefined, persistent = true): SessionManager {
    const manager = new SessionManager(resolved, persistent, false, freshState(resolved, { cwd }, persistent));
    manager.applyToolSelection(selectionFromToolNames(toolNames, resolved.classifyTool));
    return manager;
  }

  static {
    synchronous = {
      open: (filePath, destination, storage, options = {}) => SessionManager.#openPath(filePath, destination, storage, NO_POLICIES, options),
      newSession(manager, options = {}) {
        const enter = manager.#prepareNewSession(options);
        manager.#writer.retire(manager.#state);
        return enter();
      },
      setSessionFile: (manager, sessionFile) => manager.#setSessionFileNow(sessionFile),
      append: (manager, draft, options) => manager.appendDraft(draft, options),
      tree: (manager) => manager.#state.tree,
      branchWithSummary: (manager, branchFromId, summary, options) => manager.#branchWithOptions(branchFromId, summary, options),
      forkFrom(sourcePath, cwd, destination, options, fork, storage, policies = NO_POLICIES) {
        const resolved = resolveFactoryOptions(cwd, destination, storage, policies, options);
        return SessionManager.#forked(resolved, sourcePath, cwd, fork);
      },
      adopt(manager) {
        manager.#writer.enableWriteThrough();
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
      successor: (manager, plan) => manager.#successor(plan),
      publish(manager) {
        manager.#checkWritable();
        if (manager.#persistent) manager.#writer.writeNow(manager.#state);
      },
      async closeAsRead(manager) {
        manager.#state.fullWritePending = false;
        await manager.close();
      },
      checkPersisted(manager) {
        manager.#state.persistence?.check();
      },
    };
  }

  /** See {@link SynchronousSwitches.successor}. */
  #successor(plan: SuccessorPlan): SessionManager {
    this.#checkWritable();
    const current = this.#state;
    const persistent = this.#persistent;
    const cwd = this.#cwd();
    let state: SessionState;
    if (plan.kind === "new") state = freshState(this.#options, { cwd, parentSession: plan.parentSession, id: plan.id }, persistent);
    else if (plan.kind === "branched") {
      state = branchedState(this.#options, current, plan.leafId, { cwd, parentSession: persistent ? current.file : current.header.id }, persistent);
    } else state = forkedState(this.#options, current, cwd);
    return new SessionManager(this.#options, persistent, false, state);
  }

  static #opened(resolved: ResolvedOptions, file: string, readOnly: boolean): SessionManager {
    const state = openedState(resolved, file, readOnly, process.cwd());
    if (!readOnly && state.report.loaded) announceSession(resolved, file, state.header.cwd);
    return new SessionManager(resolved, !readOnly, readOnly, state);
  }

  /** The session file, or `undefined` for an in-memory session. */
  getSessionFile(): string | undefined {
    return this.#persistent || this.#readOnly ? this.#state.file : undefined;
  }

  /** The directory new session files go to; `""` in memory. */
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

  /** Rewrites the file atomically from memory now; a no-op before it exists. @throws SessionManagerError `persistence_failed` */
  async rewriteEntries(): Promise<void> {
    this.#checkWritable();
    const state = this.#state;
    if (!this.#persistent || !(state.active || state.fileExists)) return;
    state.active = true;
    this.#writer.writeAll(state);
    await this.flush();
  }

  /**
   * Finishes the current session and starts a new, empty one in the same directory. @returns the new session file, or
   * `undefined` in memory @throws SessionManagerError `invalid_session_id`; `persistence_failed` (the manager stays)
   */
  async newSession(options: NewSessionOptions = {}): Promise<string | undefined> {
    const enter = this.#prepareNewSession(options);
    await this.#state.persistence?.close();
    return enter();
  }

  /** Checks `options` and builds the new session; the step returned enters it once the current one is closed or retiring. */
  #prepareNewSession(options: NewSessionOptions): () => string | undefined {
    this.#checkWritable();
    const { id } = options;
    if (id !== undefined && (typeof id !== "string" || !isValidSessionId(id))) {
      throw new SessionManagerError("invalid_session_id", `not a valid session id: ${String(id)}`);
    }
    const selection = selectionFromToolNames(options.toolNames, this.#options.classifyTool);
    const state = freshState(this.#options, { cwd: this.#cwd(), parentSession: options.parentSession, id }, this.#persistent);
    return () => {
      this.#switchTo(state);
      this.applyToolSelection(selection);
      return this.getSessionFile();
    };
  }

  /**
   * Switches to a new session holding root..`leafId` (labels re-added at the end), parented to the current file, written
   * before this returns; the old one finishes in the background. @returns the new session file, or `undefined` in memory
   * @throws SessionTreeError `unknown_entry`; SessionManagerError `persistence_failed`
   */
  createBranchedSession(leafId: string): string | undefined {
    this.#checkWritable();
    const current = this.#state;
    const parentSession = this.#persistent ? current.file : current.header.id;
    const state = branchedState(this.#options, current, leafId, { cwd: this.#cwd(), parentSession }, this.#persistent);
    this.#writer.retire(current);
    this.#state = state;
    if (this.#persistent) this.#writer.writeNow(state);
    return this.getSessionFile();
  }

  /** Copies the session to a new file (new id, parented to the old, title kept) and switches to it. @returns both paths, or `undefined` in memory */
  async fork(): Promise<{ oldSessionFile: string; newSessionFile: string } | undefined> {
    this.#checkWritable();
    if (!this.#persistent) return undefined;
    const current = this.#state;
    const state = forkedState(this.#options, current, this.#cwd());
    await current.persistence?.close();
    this.#state = state;
    this.#writer.writeNow(state);
    await this.flush();
    return { oldSessionFile: current.file!, newSessionFile: state.file! };
  }

  /**
   * Closes the current session and switches to `sessionFile` (through this manager's storage), loaded as {@link open}
   * does; a fresh session's header is written at once. On failure the manager stays where it was. @throws what {@link open} throws
   */
  async setSessionFile(sessionFile: string): Promise<void> {
    this.#checkWritable();
    const absolute = path.resolve(sessionFile);
    const current = this.#state;
    if (absolute === current.file) await current.persistence?.close();
    const state = openedState(this.#options, absolute, false, this.#cwd());
    if (absolute !== current.file) await current.persistence?.close();
    this.#enterFile(state);
    if (!state.report.loaded) await this.flush();
  }

  /** {@link setSessionFile} for the synchronous hooks: the old session finishes in the background, a fresh header's write is queued; the file held or still finishing is `session_busy`. */
  #setSessionFileNow(sessionFile: string): void {
    this.#checkWritable();
    const absolute = path.resolve(sessionFile);
    if (absolute === this.#state.file || this.#writer.isRetiring(absolute)) {
      throw new StorageError("session_busy", `${absolute} is still being written by this manager`, { path: absolute });
    }
    const state = openedState(this.#options, absolute, false, this.#cwd());
    this.#writer.retire(this.#state);
    this.#enterFile(state);
  }

  /** Leaves the current session for `state`, counting what it leaves unwritten (it never got a file) for {@link close}. */
  #switchTo(state: SessionState): void {
    this.#leftUnwritten += this.#state.unwritten;
    this.#state = state;
  }

  /** Switches to an opened file: announced when loaded, else a fresh session's header is written. */
  #enterFile(state: SessionState): void {
    this.#switchTo(state);
    if (state.report.loaded) announceSession(this.#options, state.file!, state.header.cwd);
    else if (this.#persistent && !state.active) this.#writer.start(state);
  }

  /**
   * Moves the session to the workspace `newCwd`, recorded in the header; a managed session's file moves to its managed
   * scope (see `StateWriter.move`), an explicit one stays unless `options.intoManagedScope` asks for GJC's move: a session
   * kept in files (not a caller's other storage) then moves to the managed scope of `newCwd` and is managed from then on.
   * @throws ScopeError; SessionManagerError `persistence_failed`, `invalid_options`
   */
  async moveTo(newCwd: string, options: { intoManagedScope?: boolean } = {}): Promise<void> {
    this.#checkWritable();
    if (typeof newCwd !== "string" || newCwd.length === 0) throw new SessionManagerError("invalid_options", "newCwd must be a non-empty string");
    const state = this.#state;
    if (newCwd === state.header.cwd) return;
    const header: SessionHeader = { ...state.header, cwd: newCwd };
    const storage = this.#options.storage;
    const inFiles = storage instanceof FileSessionStorage || storage instanceof ManagedSessionStorage;
    if (!this.#persistent || !(this.#options.managed || (options.intoManagedScope === true && inFiles))) {
      state.header = header;
      if (this.#persistent && state.active) await this.rewriteEntries();
      return;
    }
    this.#options = { ...(await this.#writer.move(state, this.#options, header)), managed: true };
  }

  /** Writes the whole session now, even before an assistant message; a no-op in memory or once written. @throws SessionManagerError `persistence_failed` */
  async ensureOnDisk(): Promise<void> {
    this.#checkOpen();
    if (!this.#persistent) return;
    this.#checkWritable();
    if (!this.#state.active) this.#writer.start(this.#state);
    await this.flush();
  }

  /** Waits for queued writes, syncs the file, and waits for sessions left by synchronous switches. @throws SessionManagerError `persistence_failed`, `closed` */
  async flush(): Promise<void> {
    this.#checkOpen();
    await this.#state.persistence?.flush();
    await this.#writer.retired();
  }

  /**
   * Does a rewrite still owed (changed payloads; a format migration alone is no change to write), flushes, releases the file, then waits for sessions left by synchronous switches. Idempotent;
   * later calls but reads throw `closed`; a latched failure is rethrown after the release. A writer close that failed before
   * its descriptor was closed (`close_not_dispatched`) leaves the file held and is tried again by the next call.
   * @returns the same {@link SessionCloseReport} every time
   */
  async close(): Promise<SessionCloseReport> {
    if (this.#closed) {
      const held = this.#state.persistence;
      if (held?.closeRetryable === true) {
        await held.close();
        await this.#writer.retired();
      }
      return this.#closeReport;
    }
    const state = this.#state;
    if (this.#persistent && state.active && state.fullWritePending && !state.migrationOnly) this.#writer.writeAll(state);
    this.#closed = true;
    state.release?.();
    this.#closeReport = { unpersistedEntries: this.#leftUnwritten + state.unwritten };
    const persistence = state.persistence;
    if (persistence !== undefined) {
      await persistence.flush().catch(ignore);
      await persistence.close();
    }
    await this.#writer.retired();
    return this.#closeReport;
  }

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

  /** Moves the leaf to `branchFromId` (`null`: before the first entry) and appends a `branch_summary` of the path left. @returns the new entry's id @throws SessionTreeError `unknown_entry` */
  branchWithSummary(branchFromId: string | null, summary: string, details?: unknown, fromExtension?: boolean): string {
    return this.#branchWithOptions(branchFromId, summary, defined({ details, fromExtension }));
  }

  /** {@link branchWithSummary} with every option of the tree's. */
  #branchWithOptions(branchFromId: string | null, summary: string, options: BranchSummaryOptions): string {
    this.#checkWritable();
    checkEntryBounds(options, "the branch summary's details");
    const entry = this.#state.tree.branchWithSummary(branchFromId, summary, options);
    this.#recordEntry(entry);
    return entry.id;
  }

  /** Appends a `label` entry for `targetId` (`undefined` or `""` clears). @returns the new entry's id @throws SessionTreeError `unknown_entry` */
  appendLabelChange(targetId: string, label: string | undefined): string {
    this.#checkWritable();
    const entry = this.#state.tree.appendLabel(targetId, label);
    this.#recordEntry(entry);
    return entry.id;
  }

  /** Appends a selection change: the MCP entry, then the built-in one, sharing a `mutationCorrelationId`. @returns the new ids */
  applyToolSelection(change: ToolSelectionChange): string[] {
    this.#checkWritable();
    return selectionDrafts(change).map((draft) => this.appendDraft(draft).id);
  }

  /** Sets the title (sanitized, see `sanitizeSessionTitle`) through an appended `header_patch`. @returns false when nothing printable is left, or an automatic title would replace a user's */
  async setSessionName(name: string, source: TitleSource = "auto"): Promise<boolean> {
    this.#checkWritable();
    const title = sanitizeSessionTitle(name);
    const state = this.#state;
    if (title.length === 0 || !titleMayReplace(state.header.titleSource, source)) return false;
    state.header = { ...state.header, title, titleSource: source };
    const line: PersistableLine = { kind: "patch", record: { type: "header_patch", patch: { title, titleSource: source } }, state: "applied" };
    state.lines.push(line);
    this.#writer.persistLine(state, line);
    return true;
  }

  /** Replaces by id the `message` of `message` entries (pruned tool output, say), keeping the leaf; the next persisting step rewrites the file. @throws SessionManagerError `invalid_rewrite` */
  applyEntryMessageUpdates(entries: readonly FileEntry[]): void {
    this.#checkWritable();
    replacePayloads(this.#state, entries, "message", this.#options.now);
  }

  /** {@link applyEntryMessageUpdates} for `custom_message` `content`, `display` and `details`. @throws SessionManagerError `invalid_rewrite` */
  applyCustomMessageEntryUpdates(entries: readonly FileEntry[]): void {
    this.#checkWritable();
    replacePayloads(this.#state, entries, "custom_message", this.#options.now);
  }

  /** {@inheritDoc EntryAppender.appendDraft} */
  protected appendDraft<D extends EntryDraft>(draft: D, options?: AppendOptions): AppendedEntry<D> {
    this.#checkWritable();
    // Refused here, the value never enters the tree: the session goes on, nothing is latched.
    checkEntryBounds(draft, `the ${draft.type} entry`);
    const entry = this.#state.tree.append(draft, options);
    this.#recordEntry(entry);
    return entry;
  }

  #recordEntry(entry: FileEntry): void {
    const line: Extract<ManagedLine, { kind: "entry" }> = { kind: "entry", entry };
    const state = this.#state;
    state.lines.push(line);
    state.usage.add(entry);
    if (!state.hasAssistant && isAssistantMessage(entry)) state.hasAssistant = true;
    this.#writer.persistLine(state, line);
  }

  /** The header's cwd, else the process's: where a new session of this manager works. */
  #cwd(): string {
    return this.getCwd() || process.cwd();
  }

  /** {@inheritDoc SessionReader.current} */
  protected current(): SessionState {
    return this.#state;
  }

  #blobSink(): BlobSink | undefined {
    const blobs = this.#options.blobStore;
    return blobs === undefined ? undefined : (bytes) => void blobs.putSync(bytes);
  }

  /** @throws SessionManagerError `closed` */
  #checkOpen(): void {
    if (this.#closed) throw new SessionManagerError("closed", "the session manager is closed");
  }

  /** @throws SessionManagerError `closed`, `read_only`; a latched persistence failure */
  #checkWritable(): void {
    this.#checkOpen();
    if (this.#readOnly) throw new SessionManagerError("read_only", "the session was opened read-only", { path: this.#state.file });
    this.#state.persistence?.check();
  }
}
