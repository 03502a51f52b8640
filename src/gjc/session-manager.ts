/**
 * GJC 0.15's `SessionManager` as its app drives it, over the main entry's manager (the engine): one
 * persistence path, one loader. The face holds the engine manager of the session it is on and
 * swaps it at each committed transition (see `face-transitions.ts`); the calls whose signatures
 * agree are the engine's own (`face-core.ts`); artifacts and drafts are in `face-artifacts.ts`.
 * Where GJC's behaviour differs on purpose (owner-only files, `session_busy` for a second writer,
 * typed errors) this keeps the store's: README, "Coming from GJC".
 */
import { randomUUID } from "node:crypto";
import fs from "node:fs";
import path from "node:path";

import { SessionManager as Engine } from "../manager/session-manager.js";
import type { SessionDestination, SessionDestinationInput, MigrationPolicy, SessionMemoryMode } from "../manager/destination.js";
import type { OpenSessionOptions, SessionCloseReport, SessionManagerOptions } from "../manager/options.js";
import type { ListOptions } from "../manager/session-directories.js";
import type { SkippedSession } from "../manager/session-info.js";
import { FileSessionStorage, isStorageError } from "../storage/index.js";
import {
  assertCwdIdentity,
  checkMoveTarget,
  claimOwnership,
  isOwner,
  openDirectoryNoFollow,
  releaseOwnership,
  type DirectoryIdentity,
} from "./cwd-ownership.js";
import { destinationOf, explicitInput, hooks, managedAgentDirOf, rememberManagedAgentDir, type FaceDestination } from "./face-core.js";
import { GjcFaceError } from "./face-errors.js";
import { SessionManagerTestHooks } from "./test-hooks.js";
import { FileSessionStorage as FaceFileStorage } from "./storage.js";
import { engineStorage, type FaceSessionStorage } from "./storage-view.js";
import { inventorySessionsStrict, type StrictInventoryResult, type StrictInventoryStorage } from "./strict-inventory.js";
import { withRedactedScopeFailure } from "./scope-diagnostics.js";
import { withGjcErrors } from "./engine-errors.js";
import { removeArtifactsOf, stageArtifactCopy } from "./artifacts.js";
import { deleteManagedCandidate, removeSessionFiles } from "./face-transitions.js";
import { AttemptArtifacts, stagedFileFor } from "./face-staged.js";
import { FaceQueries } from "./face-queries.js";
import { lifecycleSessionId, withLifecycleId } from "./lifecycle-id.js";
import { gjcRows, listForPicker, listManagedForPicker, type SessionInfo } from "./picker-listing.js";
import { adoptLegacySession, isLegacySessionFile } from "./legacy-resume.js";
import { managedResumeCandidates, openSelected } from "./resume-candidates.js";
import {
  assertTranscriptAdmitted,
  canonicalPathOf,
  inspectTranscript,
  sameIdentity,
  type ResumeSessionIdentity,
  type ResumeTailError,
  type ResumeTailErrorReason,
  type ResumeTailInspection,
} from "./strict-open.js";
import { captureTranscript, type TranscriptSnapshotHandle } from "./transcript-capture.js";

/** Why a strict open opened nothing. */
export interface StrictSessionOpenFailure {
  kind: "error";
  reason: ResumeTailErrorReason | "identity-mismatch" | "migration-required" | "artifact_capacity_exceeded" | "migration_busy";
  message?: string;
  size?: number;
}

/** A strict open's outcome. */
export type StrictSessionOpenResult = { kind: "opened"; manager: SessionManager } | StrictSessionOpenFailure;

/** A strict fork's outcome. */
export type StrictSessionForkResult = { kind: "forked"; manager: SessionManager } | StrictSessionOpenFailure;

/** How a strict close ended: see {@link SessionManager.closeStrict}. */
export type SessionManagerCloseOutcome = { kind: "closed" } | { kind: "close_failed_retryable"; error: unknown } | { kind: "close_unknown"; error: unknown };

/** See the module comment. */
export class SessionManager extends FaceQueries {
  /** A strictly opened file the next `setSessionFile` must find unchanged. */
  #pendingAdoption: ResumeSessionIdentity | undefined;
  #closed = false;
  /** The last strict close was `close_failed_retryable`: the writer still holds the file, to be closed again. */
  #closeRetryPending = false;
  /** The factory options, for the engine managers this face opens itself. */
  readonly #options: SessionManagerOptions;

  private constructor(engine: Engine, destination: FaceDestination, memoryMode?: SessionMemoryMode, options: SessionManagerOptions = {}) {
    super(engine, destination, memoryMode);
    this.#options = options;
  }

  /** {@inheritDoc FaceStaged.reopen} */
  protected async reopen(file: string): Promise<Engine> {
    return Engine.open(file, path.dirname(file), undefined, undefined, this.memoryMode, this.#options);
  }

  /**
   * A subagent attempt that becomes `finalSessionFile` only if committed: a fresh session at `<dir>/.staging/<attemptId>.jsonl`
   * (header written now), its artifacts claimed in the final artifacts directory (see `face-staged.ts`).
   * @throws GjcFaceError `staged_session_unavailable` for an unsafe or existing attempt, or a final path that is itself staged
   */
  static async openStaged(
    finalSessionFile: string,
    appStorage?: FaceSessionStorage,
    attemptId: string = randomUUID(),
    options: SessionManagerOptions = {},
  ): Promise<SessionManager> {
    const storage = engineStorage(appStorage);
    const finalPath = canonicalPathOf(finalSessionFile);
    const staged = stagedFileFor(finalPath, attemptId);
    const dir = path.dirname(finalPath);
    const engine = await Engine.open(staged, dir, storage, undefined, undefined, options);
    const manager = new SessionManager(engine, destinationOf(dir, options.agentDir, storage), undefined, options);
    manager.beginAttempt({ finalSessionFile: finalPath, stagedSessionFile: staged, artifacts: new AttemptArtifacts(finalPath), state: "open" });
    try {
      await manager.ensureOnDisk();
    } catch (error) {
      await manager.discardStaged().catch(() => undefined);
      throw error;
    }
    return manager;
  }

  // ---- creation and opening ---------------------------------------------------------------------

  /** A new session for `cwd` in `destination` (default: the managed scope of `cwd`), written from the first assistant message. */
  static create(cwd: string, destination?: SessionDestinationInput, appStorage?: FaceSessionStorage, options: SessionManagerOptions = {}): SessionManager {
    const storage = engineStorage(appStorage);
    const input = explicitInput(destination);
    const engine = withGjcErrors(() => Engine.create(cwd, input, storage, options));
    return new SessionManager(withLifecycleId(engine), destinationOf(input, options.agentDir, storage), undefined, options);
  }

  /** A session that never persists. */
  static inMemory(
    cwd: string = process.cwd(),
    storage?: FaceSessionStorage,
    options: Pick<SessionManagerOptions, "classifyTool" | "now" | "toolNames"> = {},
  ): SessionManager {
    return new SessionManager(withLifecycleId(Engine.inMemory(cwd, engineStorage(storage), options)), {
      managed: false,
      agentDir: undefined,
      token: undefined,
    });
  }

  /**
   * Opens the session file `filePath` (default destination: its directory) as the engine's `open` does. A path that holds no
   * session yet gets its header at once, as GJC's open does, so the file a caller names exists when `open` returns.
   */
  static async open(
    filePath: string,
    destination?: SessionDestinationInput,
    appStorage?: FaceSessionStorage,
    migrationPolicy?: MigrationPolicy,
    sessionMemoryMode?: SessionMemoryMode,
    options: OpenSessionOptions = {},
  ): Promise<SessionManager> {
    const storage = engineStorage(appStorage);
    const input = explicitInput(destination) ?? (typeof filePath === "string" && filePath.length > 0 ? path.dirname(path.resolve(filePath)) : undefined);
    if (typeof filePath === "string" && filePath.length > 0) assertTranscriptAdmitted(filePath, storage, sessionMemoryMode);
    const engine = await Engine.open(filePath, input, storage, migrationPolicy, sessionMemoryMode, options);
    const { readOnly, ...factory } = options;
    const manager = new SessionManager(engine, destinationOf(input, options.agentDir, storage), sessionMemoryMode, factory);
    if (readOnly !== true && !engine.getLoadReport().loaded)
      await manager.ensureOnDisk().catch((error: unknown) =>
        manager
          .close()
          .catch(() => undefined)
          .then(() => Promise.reject(error)),
      );
    return manager;
  }

  /**
   * Resumes as the engine's `continueRecent` does (this terminal's breadcrumb, then the newest session no other writer holds),
   * else a new session. A resumed session is in read-only resume, as after a strict open: its file is not written (a v1-v4
   * file is not migrated on disk) until the session changes.
   */
  static async continueRecent(
    cwd: string,
    destination?: SessionDestinationInput,
    appStorage?: FaceSessionStorage,
    migrationPolicy?: MigrationPolicy,
    sessionMemoryMode?: SessionMemoryMode,
    options: SessionManagerOptions = {},
  ): Promise<SessionManager> {
    const storage = engineStorage(appStorage);
    const input = explicitInput(destination);
    const face = destinationOf(input, options.agentDir, storage);
    if (face.managed && (storage === undefined || storage instanceof FileSessionStorage)) {
      const token = withGjcErrors(() => (input === undefined ? SessionManager.managedDestination(cwd, options.agentDir) : (input as SessionDestination)));
      const skipped: SkippedSession[] = [];
      for await (const file of managedResumeCandidates(cwd, face.agentDir, options.terminalId)) {
        const opened = await openSelected(file, storage, skipped, (identity) =>
          SessionManager.openExistingStrict(identity, token, storage, migrationPolicy, sessionMemoryMode, options),
        );
        if (opened !== undefined) {
          if (skipped.length > 0) options.onSkipped?.(skipped);
          return opened;
        }
      }
      if (skipped.length > 0) options.onSkipped?.(skipped);
      return SessionManager.create(cwd, token, storage, options);
    }
    const engine = await withGjcErrors(() => Engine.continueRecent(cwd, input, storage, migrationPolicy, sessionMemoryMode, options));
    const manager = new SessionManager(engine, face, sessionMemoryMode, options);
    manager.readOnlyResume = engine.getLoadReport().loaded;
    return manager;
  }

  /** A new session for `cwd` copying every line of `sourcePath`, parented to its id, with its title (and the lifecycle's preallocated id, in a process GJC's lifecycle daemon spawned). */
  static async forkFrom(
    sourcePath: string,
    cwd: string,
    destination?: SessionDestinationInput,
    appStorage?: FaceSessionStorage,
    migrationPolicy?: MigrationPolicy,
    sessionMemoryMode?: SessionMemoryMode,
    options: SessionManagerOptions = {},
  ): Promise<SessionManager> {
    const storage = engineStorage(appStorage);
    const input = explicitInput(destination);
    if (typeof sourcePath === "string" && sourcePath.length > 0) assertTranscriptAdmitted(sourcePath, storage, sessionMemoryMode);
    // A lifecycle fork's copy carries the preallocated id, as a created session does.
    const id = lifecycleSessionId();
    const engine = hooks.forkFrom(sourcePath, cwd, input, options, id === undefined ? {} : { id }, storage, { migrationPolicy, sessionMemoryMode });
    return new SessionManager(engine, destinationOf(input, options.agentDir, storage), sessionMemoryMode, options);
  }

  /** Inspects one transcript strictly for resume; writes nothing and takes no lock (see `strict-open.ts`). */
  static async inspectSessionTailReadOnly(filePath: string, storage?: FaceSessionStorage): Promise<ResumeTailInspection> {
    const inspected = inspectTranscript(filePath, engineStorage(storage));
    return inspected.kind === "error" ? inspected : { kind: inspected.kind, identity: inspected.identity };
  }

  /**
   * Opens exactly the inspected file, or nothing: the file must still have `identity` before and after the open. The manager
   * is then in read-only resume: nothing is written to the file (not even a migration's owed rewrite) until the session
   * changes. An error result leaves the file as it was. Default destination: the file's directory.
   */
  static async openExistingStrict(
    identity: ResumeSessionIdentity,
    destination?: SessionDestinationInput,
    appStorage?: FaceSessionStorage,
    migrationPolicy?: MigrationPolicy,
    sessionMemoryMode?: SessionMemoryMode,
    options: SessionManagerOptions = {},
  ): Promise<StrictSessionOpenResult> {
    const storage = engineStorage(appStorage);
    let file = identity.canonicalPath;
    let expected = identity;
    const before = inspectTranscript(file, storage);
    if (before.kind === "error") return before;
    if (!sameIdentity(before.identity, identity)) return { kind: "error", reason: "identity-mismatch" };
    let target = destination ?? path.dirname(file);
    const managed = typeof destination === "object" && destination.kind === "managed" ? destination : undefined;
    if (managed !== undefined && before.cwd !== undefined) {
      const agentDir = managedAgentDirOf(managed) ?? options.agentDir;
      // A legacy file is never written in place: a managed resume opens its copy in the workspace's scope.
      if (isLegacySessionFile(file, agentDir)) {
        const adopted = await adoptLegacySession(file, before.cwd, identity.sha256, agentDir, migrationPolicy);
        if (adopted.kind === "error") return adopted;
        const copy = inspectTranscript(adopted.path, storage);
        if (copy.kind === "error") return copy;
        file = adopted.path;
        expected = copy.identity;
      }
      // A session of another workspace's scope (a linked worktree's, say) is opened where it is, as a session of that scope.
      // Anything else (a breadcrumb's explicit session directory, a project transcript) is opened in its own directory.
      if (path.dirname(file) !== managed.sessionDir) target = SessionManager.#scopeOf(file, before.cwd, agentDir) ?? path.dirname(file);
    }
    const manager = await SessionManager.open(file, target, storage, migrationPolicy, sessionMemoryMode, options);
    manager.readOnlyResume = true;
    const after = inspectTranscript(file, storage);
    if (after.kind === "error" || !sameIdentity(after.identity, expected)) {
      await manager.close();
      return after.kind === "error" ? after : { kind: "error", reason: "identity-mismatch" };
    }
    return { kind: "opened", manager };
  }

  /** The managed destination of workspace `cwd` when `file` is one of its scope's files; `undefined` otherwise or when it cannot be resolved. */
  static #scopeOf(file: string, cwd: string, agentDir: string | undefined): SessionDestination | undefined {
    try {
      const token = SessionManager.managedDestination(cwd, agentDir);
      return path.dirname(file) === token.sessionDir ? token : undefined;
    } catch {
      return undefined;
    }
  }

  /** Captures `filePath` for a later strict fork: held by descriptor, read in ranges, its identity fixed (see `transcript-capture.ts`). */
  static captureTranscriptStrict(filePath: string): { kind: "captured"; snapshot: TranscriptSnapshotHandle } | ResumeTailError {
    return captureTranscript(filePath);
  }

  /**
   * A new session for `cwd` holding the captured transcript (new id, parented to the source's, title kept), made only while
   * the source is still the captured bytes, before and after it is copied; a copy made of anything else is removed.
   */
  static async forkFromCaptured(
    snapshot: TranscriptSnapshotHandle,
    cwd: string,
    destination?: SessionDestinationInput,
    _migrationPolicy?: MigrationPolicy,
    sessionMemoryMode?: SessionMemoryMode,
    options: SessionManagerOptions = {},
  ): Promise<StrictSessionForkResult> {
    const before = snapshot.revalidate();
    if (before.kind === "error") return { kind: "error", reason: before.reason };
    const manager = await SessionManager.forkFrom(snapshot.sourcePath, cwd, destination, undefined, undefined, sessionMemoryMode, options);
    await manager.flush();
    const after = snapshot.revalidate();
    if (after.kind === "valid" && manager.getHeader().parentSession === snapshot.identity.sessionId) return { kind: "forked", manager };
    const file = manager.getSessionFile();
    await manager.close();
    if (file !== undefined) await removeSessionFiles(file);
    return { kind: "error", reason: "identity-mismatch" };
  }

  /**
   * Deletes a session the CLI picker listed without a session directory: it must sit in the managed scope of its header's
   * cwd (default agent directory) or below that workspace's `.gjc/`. Its artifacts and line index go with it.
   * @throws GjcFaceError `session_not_contained`
   */
  static async deleteManagedCandidate(sessionPath: string): Promise<void> {
    await deleteManagedCandidate(sessionPath);
  }

  /**
   * Records the inspected identity of `filePath` (a file of this manager's directory) as pending strict adoption: the next
   * `setSessionFile(filePath)` refuses it if it changed meanwhile. @returns the path to adopt
   * @throws GjcFaceError `prepared_session_changed` when it cannot be inspected
   */
  async prepareManagedCandidateForStrictAdoption(
    filePath: string,
    _migrationPolicy: MigrationPolicy,
    expectedIdentity: ResumeSessionIdentity,
  ): Promise<string> {
    const inspected = inspectTranscript(filePath);
    if (inspected.kind === "error") throw new GjcFaceError("prepared_session_changed", `Could not inspect prepared managed session: ${inspected.reason}`);
    if (!sameIdentity(inspected.identity, expectedIdentity))
      throw new GjcFaceError("prepared_session_changed", "Prepared session changed before strict adoption.");
    this.#pendingAdoption = inspected.identity;
    return inspected.identity.canonicalPath;
  }

  /**
   * Closes the current session and switches to `sessionFile` as the engine does; a file recorded for strict adoption must be
   * unchanged. Artifact bindings move to the new file; the temporary artifacts of a session in memory go, unless deferred.
   * @throws GjcFaceError `prepared_session_changed`; what the engine's `setSessionFile` throws
   */
  async setSessionFile(sessionFile: string, options: { deferEphemeralArtifactRetirement?: boolean } = {}): Promise<void> {
    const pending = this.#pendingAdoption;
    this.#pendingAdoption = undefined;
    if (pending !== undefined && pending.canonicalPath === path.resolve(sessionFile)) {
      const now = inspectTranscript(sessionFile);
      if (now.kind === "error" || !sameIdentity(now.identity, pending))
        throw new GjcFaceError("prepared_session_changed", "Prepared session changed before strict adoption.");
    }
    SessionManagerTestHooks.beforeResidentTransitionIndexBuild?.();
    await this.engine.setSessionFile(sessionFile);
    this.readOnlyResume = false;
    this.bumpRevisions();
    this.resetArtifactBindings();
    if (options.deferEphemeralArtifactRetirement !== true) this.retireEphemeralArtifactsAfterTransition();
  }

  // ---- destinations and listings ----------------------------------------------------------------

  /** A trusted token for the managed scope of `cwd` (prepared now). @throws ManagedScopeUnavailableError (path-free) when it cannot be */
  static managedDestination(cwd: string, agentDir?: string, storage?: FaceSessionStorage): SessionDestination {
    const token = withRedactedScopeFailure(() => Engine.managedDestination(cwd, agentDir, engineStorage(storage)));
    rememberManagedAgentDir(token, agentDir);
    return token;
  }

  /** A trusted token for the session directory `directory`; a relative one is taken against the process cwd now. */
  static explicitDestination(directory: string): SessionDestination {
    return Engine.explicitDestination(typeof directory === "string" && directory.length > 0 ? path.resolve(directory) : directory);
  }

  /** The managed scope directory of `cwd`, prepared for writing. @throws ManagedScopeUnavailableError (path-free) when it cannot be */
  static getDefaultSessionDir(cwd: string, agentDir?: string, storage?: FaceSessionStorage): string {
    return withRedactedScopeFailure(() => Engine.getDefaultSessionDir(cwd, agentDir, engineStorage(storage)));
  }

  /** The managed scope directory of `cwd`, resolved without creating anything. */
  static getDefaultSessionDirReadOnly(cwd: string, agentDir?: string): string {
    return Engine.getDefaultSessionDirReadOnly(cwd, agentDir);
  }

  /** The sessions of `sessionDir` (default: the managed scope of `cwd`), newest first. */
  static async list(cwd: string, sessionDir?: string, storage?: FaceSessionStorage, options: ListOptions = {}): Promise<SessionInfo[]> {
    return gjcRows(await Engine.list(cwd, sessionDir === undefined ? undefined : path.resolve(sessionDir), engineStorage(storage), options));
  }

  /** The sessions of every managed scope, newest first. */
  static async listAll(storage?: FaceSessionStorage, managedAgentDir?: string, options: ListOptions = {}): Promise<SessionInfo[]> {
    return gjcRows(await Engine.listAll(engineStorage(storage), managedAgentDir, options));
  }

  /** The picker's rows for `cwd`: `sessionDir`'s sessions, or the managed and project ones; never writes; `[]` on failure. */
  static async listForResumePickerReadOnly(cwd: string, sessionDir?: string, storage?: FaceSessionStorage): Promise<SessionInfo[]> {
    return listForPicker(cwd, sessionDir, engineStorage(storage));
  }

  /** The managed scope's sessions of `cwd` with the project's `.gjc` transcripts, merged by id, newest first; never writes. */
  static async listManagedForResumePickerReadOnly(cwd: string, managedAgentDir?: string, storage?: FaceSessionStorage): Promise<SessionInfo[]> {
    return listManagedForPicker(cwd, managedAgentDir, engineStorage(storage));
  }

  /**
   * GJC's strict inventory of `options.sessionDir` (else the destination's directory, else the managed scope of `cwd`, resolved
   * without creating anything) through `options.storage` (default: the file system); see `strict-inventory.ts`.
   */
  static inventorySessionsStrict(
    cwd: string,
    options: { sessionDir?: string; storage?: StrictInventoryStorage; destination?: SessionDestination } = {},
  ): StrictInventoryResult {
    const dir = options.sessionDir ?? options.destination?.sessionDir ?? Engine.getDefaultSessionDirReadOnly(cwd);
    return inventorySessionsStrict(cwd, path.resolve(dir), options.storage ?? new FaceFileStorage());
  }

  /** The picker's rows for this manager's destination. */
  async listForResumePickerReadOnly(): Promise<SessionInfo[]> {
    if (this.destination.managed) return listManagedForPicker(this.engine.getCwd(), this.destination.agentDir);
    return this.engine.isPersisted() ? listForPicker(this.engine.getCwd(), this.engine.getSessionDir()) : [];
  }

  /** Whether this manager's sessions go to a managed scope (not an explicit directory, not memory). */
  isManagedDestination(): boolean {
    return this.destination.managed;
  }

  /** This manager's destination, to hand back to `forkFrom` or `open`; `undefined` in memory. */
  getDestinationForFork(): SessionDestination | undefined {
    const destination = this.destination;
    if (destination.token === undefined && this.engine.isPersisted()) {
      destination.token = destination.managed
        ? SessionManager.managedDestination(this.engine.getCwd(), destination.agentDir)
        : SessionManager.explicitDestination(this.engine.getSessionDir());
    }
    return destination.token;
  }

  // ---- process-cwd ownership and cwd transitions --------------------------------------------------

  /** Records `manager` as the owner of the process cwd unless another live manager is. @returns whether `manager` owns it now */
  static claimProcessCwdOwnership(manager: SessionManager): boolean {
    return claimOwnership(manager);
  }

  /** Whether `manager` owns the process cwd. */
  static isProcessCwdOwner(manager: SessionManager): boolean {
    return isOwner(manager);
  }

  /** Gives the process-cwd claim up if `manager` holds it. */
  static releaseProcessCwdOwnership(manager: SessionManager): void {
    releaseOwnership(manager);
  }

  /** @throws GjcFaceError `cwd_identity_changed` unless the process cwd is the directory `expectedIdentity` names */
  static async assertProcessCwdIdentity(expectedIdentity: DirectoryIdentity): Promise<void> {
    await assertCwdIdentity(expectedIdentity);
  }

  /** Opens `dir` read-only as a directory, refusing a final symlink (not on Windows). */
  static async openNoFollowDirectory(dir: string): Promise<fs.promises.FileHandle> {
    return openDirectoryNoFollow(dir);
  }

  /** Runs `fn` as this manager's only cwd writer, after earlier transitions and the read leases granted before it. */
  async runExclusiveCwdTransition<T>(fn: () => Promise<T>): Promise<T> {
    return this.transitions.exclusive(fn);
  }

  /** Runs `fn` under a shared read lease: no cwd transition of this manager commits meanwhile. */
  async runWithCwdReadLease<T>(fn: () => Promise<T>): Promise<T> {
    return this.transitions.withReadLease(fn);
  }

  /** Settles once every transition queued so far has; never rejects. */
  async joinCwdTransition(): Promise<void> {
    await this.transitions.join();
  }

  /** How many moves have committed (0 at first). */
  getCwdGeneration(): number {
    return this.transitions.generation;
  }

  /**
   * Moves the session to the workspace `newCwd` as the engine does, as this manager's cwd transition: the target directory
   * must be the one `options` pinned (no link, same dev/ino) before and after; a committed move bumps the cwd generation.
   * A session kept in files moves to the managed scope of `newCwd`, as GJC's does (one of an explicit directory too, which
   * is then managed); its artifacts follow it: copied bounded as a fork's, then removed from the old place.
   * @throws GjcFaceError `cwd_identity_changed`; what the engine's `moveTo` throws; MigrationError when the artifacts cannot
   * follow (the session has moved, its artifacts stay where they were)
   */
  async moveTo(
    newCwd: string,
    options: { expectedIdentity?: DirectoryIdentity; targetHandle?: { stat(opts: { bigint: true }): Promise<fs.BigIntStats> } } = {},
  ): Promise<void> {
    await this.transitions.exclusive(async () => {
      await checkMoveTarget(newCwd, options);
      const before = this.engine.getSessionFile();
      await this.engine.moveTo(newCwd, { intoManagedScope: true });
      await checkMoveTarget(newCwd, options);
      this.readOnlyResume = false;
      this.bumpRevisions(["headerExport"]);
      this.transitions.advance();
      const after = this.engine.getSessionFile();
      if (!this.engine.isPersisted() || before === undefined || after === undefined || before === after) return;
      // The session now lives in the managed scope of its new cwd: a token for the old place would point elsewhere.
      this.destination.managed = true;
      this.destination.token = undefined;
      this.resetArtifactBindings();
      const copy = await stageArtifactCopy(before, after);
      if (copy === undefined) return;
      copy.publish();
      await removeArtifactsOf(before);
    });
  }

  // ---- writes, flush and close ------------------------------------------------------------------

  /** Writes the whole session now, even before an assistant message; a no-op in memory, once written, and in read-only resume. */
  async ensureOnDisk(): Promise<void> {
    if (this.readOnlyResume) return;
    await this.engine.ensureOnDisk();
  }

  /** Waits for queued writes and syncs the file, and for the sessions this manager left. */
  async flush(): Promise<void> {
    await this.engine.flush();
    await this.retired();
  }

  /**
   * Joins the cwd transitions, gives up the process-cwd claim, drops prepared successors, then closes the session (a
   * read-only resume writes nothing, not even an owed rewrite). Idempotent. @returns the engine's close report
   */
  async close(): Promise<SessionCloseReport> {
    await this.transitions.join();
    releaseOwnership(this);
    if (!this.#closed) {
      this.#closed = true;
      await this.discardAllPrepared().catch(() => undefined);
      this.retireEphemeralArtifactsAfterTransition();
    }
    const engine = this.engine;
    if (this.readOnlyResume) await hooks.closeAsRead(engine);
    const report = await engine.close();
    await this.retired();
    await this.ephemeralRetired();
    return report;
  }

  /**
   * After a latched persistence failure: releases the file, then reloads it from disk if it is a strictly valid transcript that
   * holds still while it is inspected twice; memory then holds what the file holds, and what never reached it is gone. A
   * no-op without a failure. @throws the latched failure when there is no file to reload, or it is not usable
   */
  async recoverPersistenceFailure(): Promise<void> {
    let latched: unknown;
    try {
      hooks.checkPersisted(this.engine);
      return;
    } catch (error) {
      latched = error;
    }
    const file = this.engine.getSessionFile();
    if (!this.engine.isPersisted() || file === undefined) throw latched;
    await this.engine.close().catch(() => undefined);
    const first = inspectTranscript(file);
    const second = inspectTranscript(file);
    if (first.kind === "error" || second.kind === "error" || !sameIdentity(first.identity, second.identity)) throw latched;
    this.swapEngine(await this.reopen(file));
  }

  /**
   * {@link close}, reporting instead of throwing: `closed`; `close_failed_retryable` when the writer's close failed before it
   * closed its descriptor (still held, with its lock: the next call closes it again); else `close_unknown`, the file released.
   */
  async closeStrict(): Promise<SessionManagerCloseOutcome> {
    try {
      await this.close();
      this.#closeRetryPending = false;
      return { kind: "closed" };
    } catch (error) {
      this.#closeRetryPending = isStorageError(error, "close_not_dispatched");
      return this.#closeRetryPending ? { kind: "close_failed_retryable", error } : { kind: "close_unknown", error };
    }
  }

  /** Flushes (not after a `close_failed_retryable`: only the close is left), then {@link closeStrict}; a failed flush is `close_unknown`. */
  async flushAndCloseStrict(): Promise<SessionManagerCloseOutcome> {
    if (this.#closeRetryPending) return this.closeStrict();
    try {
      await this.flush();
    } catch (error) {
      await this.close().catch(() => undefined);
      return { kind: "close_unknown", error };
    }
    return this.closeStrict();
  }
}
