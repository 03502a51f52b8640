/**
 * The `/gjc` manager's two-phase transitions. A successor (new, branched, forked) is a second
 * engine manager built beside the current one while every getter still shows the current one;
 * nothing of it reaches the disk before the synchronous commit, which writes it whole (durable,
 * no-replace) where it must exist, publishes a fork's staged artifact copy, and puts the face on
 * it. A discard, or a process killed before the commit, leaves no transcript: at most a hidden
 * staging directory no listing reads. Rollback snapshots name the session to come back to.
 */
import fs from "node:fs";
import path from "node:path";

import { SessionManager as Engine } from "../manager/session-manager.js";
import { removeLineIndex } from "../manager/line-index.js";
import { FileSessionStorage } from "../storage/index.js";
import { SecureDir, SecureFsError } from "../fs/index.js";
import type { SessionContext } from "../session/index.js";
import { artifactsDirOf, removeArtifactsOf, stageArtifactCopy } from "./artifacts.js";
import { FaceArtifacts } from "./face-artifacts.js";
import { persistedDetails } from "./entry-payloads.js";
import { hooks } from "./face-core.js";
import { GjcFaceError } from "./face-errors.js";
import { canonicalDirectoryOf, canonicalPathOf } from "./strict-open.js";
import { captureTranscript } from "./transcript-capture.js";

/** A prepared successor as GJC's app reads it; the identity fields are frozen. */
export interface PreparedNewSession {
  readonly sessionId: string;
  /** `undefined` in memory */
  readonly sessionFile: string | undefined;
  /** `sessionFile` without `.jsonl`, or `null` */
  readonly artifactsDir: string | null;
  /** Always `null` here (see `getManagedLegacyLocalMigrationSource`). */
  readonly managedLegacyLocalMigrationSource: null;
}

/** What the face keeps of a prepared successor. */
interface Prepared {
  engine: Engine;
  /** whether the commit writes the whole successor (branch, fork, or asked for by `ensurePreparedNewSessionOnDisk`) */
  writeOnCommit: boolean;
  artifacts: { publish: () => void; discard: () => Promise<void> } | undefined;
}

/** A rollback snapshot: the session to come back to. GJC's app reads `sessionId` and `sessionFile`. */
export interface SessionManagerStateSnapshot {
  readonly sessionId: string;
  readonly sessionFile: string | undefined;
  readonly leafId: string | null;
}

/** A default-model choice staged beside the session: applied by the promotion only if the session is as it was then. */
export interface DefaultModelSelectionStage {
  readonly sessionId: string;
  readonly sessionFile: string | undefined;
  readonly model: string;
  readonly thinkingLevel: string | undefined;
  readonly appendThinkingLevel: boolean;
  readonly revisions: Readonly<{ entry: number; leaf: number; headerExport: number }>;
}

/** How a promotion ended: applied, not applied (the session moved on, or the first write failed), or applied in part. */
export type DefaultModelSelectionPromotion =
  { readonly kind: "promoted" } | { readonly kind: "not_promoted"; readonly error?: Error } | { readonly kind: "unknown"; readonly error: Error };

/** The engine manager and leaf a snapshot was taken on. */
const snapshotEngines = new WeakMap<SessionManagerStateSnapshot, Engine>();

function unavailable(): GjcFaceError {
  return new GjcFaceError("prepared_session_unavailable", "Prepared session is no longer available.");
}

/** Whether a regular file is at `file` now. */
function fileExists(file: string): boolean {
  try {
    return fs.lstatSync(file).isFile();
  } catch {
    return false;
  }
}

/** Base of the `/gjc` manager holding its two-phase transitions. */
export abstract class FaceTransitions extends FaceArtifacts {
  readonly #prepared = new Map<PreparedNewSession, Prepared>();
  readonly #stages = new WeakSet<DefaultModelSelectionStage>();

  #record(engine: Engine, prepared: Omit<Prepared, "engine">): PreparedNewSession {
    const file = engine.getSessionFile();
    const record: PreparedNewSession = Object.freeze({
      sessionId: engine.getSessionId(),
      sessionFile: file,
      artifactsDir: file === undefined ? null : artifactsDirOf(file),
      managedLegacyLocalMigrationSource: null,
    });
    this.#prepared.set(record, { engine, ...prepared });
    return record;
  }

  #lookup(prepared: PreparedNewSession): Prepared {
    const entry = this.#prepared.get(prepared);
    if (entry === undefined) throw unavailable();
    return entry;
  }

  /** Builds a new, empty successor (parented to `options.parentSession`); nothing is written. `drop` is GJC's and changes nothing here. */
  async prepareNewSession(options: { parentSession?: string; drop?: boolean } = {}): Promise<PreparedNewSession> {
    await this.engine.flush();
    const engine = hooks.successor(this.engine, { kind: "new", parentSession: options.parentSession });
    return this.#record(engine, { writeOnCommit: false, artifacts: undefined });
  }

  /** Builds a successor holding root..`leafId` (labels re-added), parented to the current file; written at the commit. @throws SessionTreeError `unknown_entry` */
  async prepareBranchedSession(leafId: string): Promise<PreparedNewSession> {
    await this.engine.flush();
    const engine = hooks.successor(this.engine, { kind: "branched", leafId });
    return this.#record(engine, { writeOnCommit: engine.isPersisted(), artifacts: undefined });
  }

  /**
   * Builds a copy of the session (new id, parented to this id, title kept) with a bounded copy of its artifacts, staged
   * hidden; written at the commit. @returns `undefined` in memory or before the session has a file
   * @throws MigrationError `artifact_capacity_exceeded`, `unsafe_artifacts` for an artifact tree a fork may not copy
   */
  async prepareFork(): Promise<PreparedNewSession | undefined> {
    return this.#stageFork(true);
  }

  /**
   * Copies the session to a new file (new id, parented to this id, title kept) with a bounded copy of its artifacts, and
   * switches to it: the copy is written whole and its artifacts published before the switch, so a failure leaves the
   * manager on its session and nothing of the copy behind. A session whose file is not written yet forks too (no artifacts
   * then). @returns both paths, or `undefined` in memory
   * @throws MigrationError `artifact_capacity_exceeded`, `unsafe_artifacts`; SessionManagerError `persistence_failed`
   */
  async fork(): Promise<{ oldSessionFile: string; newSessionFile: string } | undefined> {
    const oldSessionFile = this.engine.getSessionFile();
    const prepared = await this.#stageFork(false);
    if (prepared === undefined || oldSessionFile === undefined) return undefined;
    try {
      this.commitPreparedNewSession(prepared);
    } catch (error) {
      await this.discardPreparedNewSession(prepared).catch(() => undefined);
      throw error;
    }
    // The source's writer is let go before returning, as GJC's fork closes it first.
    await this.retired();
    return { oldSessionFile, newSessionFile: prepared.sessionFile! };
  }

  /** The forked successor, staged; `onlyWritten`: `undefined` also when the session's file is not on disk yet. */
  async #stageFork(onlyWritten: boolean): Promise<PreparedNewSession | undefined> {
    const source = this.engine.getSessionFile();
    if (!this.engine.isPersisted() || source === undefined) return undefined;
    await this.engine.flush();
    const written = fileExists(source);
    if (onlyWritten && !written) return undefined;
    const engine = hooks.successor(this.engine, { kind: "forked" });
    const artifacts = written ? await stageArtifactCopy(source, engine.getSessionFile()!) : undefined;
    return this.#record(engine, { writeOnCommit: true, artifacts });
  }

  /** Appends a `model_change` to the unpublished successor. @returns the entry id @throws GjcFaceError `prepared_session_unavailable` */
  appendPreparedModelChange(prepared: PreparedNewSession, model: string, role?: string): string {
    return this.#lookup(prepared).engine.appendModelChange(model, role);
  }

  /** Appends a `thinking_level_change` to the unpublished successor. @returns the entry id */
  appendPreparedThinkingLevelChange(prepared: PreparedNewSession, thinkingLevel?: string): string {
    return this.#lookup(prepared).engine.appendThinkingLevelChange(thinkingLevel);
  }

  /** Appends a `service_tier_change` to the unpublished successor. @returns the entry id */
  appendPreparedServiceTierChange(prepared: PreparedNewSession, serviceTier: string | null): string {
    return this.#lookup(prepared).engine.appendServiceTierChange(serviceTier);
  }

  /** Appends a `custom_message` to the unpublished successor. @returns the entry id */
  appendPreparedCustomMessageEntry(
    prepared: PreparedNewSession,
    customType: string,
    content: Parameters<Engine["appendCustomMessageEntry"]>[1],
    display: boolean,
    details?: unknown,
    attribution: "user" | "agent" = "agent",
  ): string {
    return this.#lookup(prepared).engine.appendCustomMessageEntry(customType, content, display, persistedDetails(details), attribution);
  }

  /**
   * Makes the commit write the whole successor even before an assistant message. GJC writes it now; here it is written by
   * the commit (durable, no-replace), so that a process that dies before the commit leaves no transcript behind. A session
   * directory on disk is checked now, so an unusable one fails here rather than in the commit (a caller's other storage is
   * reached only by the commit's write).
   */
  async ensurePreparedNewSessionOnDisk(prepared: PreparedNewSession): Promise<void> {
    const entry = this.#lookup(prepared);
    const file = entry.engine.getSessionFile();
    if (!entry.engine.isPersisted() || file === undefined) return;
    const storage = this.destination.storage;
    if (storage === undefined || storage instanceof FileSessionStorage) SecureDir.openRoot(path.dirname(file)).close();
    entry.writeOnCommit = true;
  }

  /** The context of the successor's entries (leaf: the last one); the current session is not touched. */
  buildPreparedNewSessionContext(prepared: PreparedNewSession): SessionContext {
    return this.#lookup(prepared).engine.buildSessionContext();
  }

  /**
   * Puts the manager on the successor, synchronously: written whole first where it must exist, a fork's artifacts published,
   * every artifact binding and the read-only resume cleared; the previous session finishes in the background.
   * @throws GjcFaceError `prepared_session_unavailable`; SessionManagerError `persistence_failed` (nothing switched)
   */
  commitPreparedNewSession(prepared: PreparedNewSession): void {
    const entry = this.#lookup(prepared);
    if (entry.writeOnCommit) hooks.publish(entry.engine);
    entry.artifacts?.publish();
    this.#prepared.delete(prepared);
    this.swapEngine(entry.engine);
    this.resetArtifactBindings();
    this.retireEphemeralArtifactsAfterTransition();
  }

  /** Drops a prepared successor: closed, its staged artifacts and any directory made for it removed. Idempotent. */
  async discardPreparedNewSession(prepared: PreparedNewSession): Promise<void> {
    const entry = this.#prepared.get(prepared);
    if (entry === undefined) return;
    this.#prepared.delete(prepared);
    const errors: unknown[] = [];
    const attempt = async (step: () => Promise<unknown>): Promise<void> => {
      try {
        await step();
      } catch (error) {
        errors.push(error);
      }
    };
    // Its only possible failure is a commit's write, already thrown to the caller of the commit.
    await entry.engine.close().catch(() => undefined);
    if (entry.artifacts !== undefined) await attempt(entry.artifacts.discard);
    const file = prepared.sessionFile;
    // Readiness work may have made the successor's artifacts directory (GJC's `local://` root); its transcript was never written.
    if (file !== undefined && !fileExists(file)) await attempt(() => removeArtifactsOf(file));
    if (errors.length === 1) throw errors[0];
    if (errors.length > 1) throw new AggregateError(errors, "Discarding the prepared session failed");
  }

  /** Drops every prepared successor (a close); the first failure is rethrown after all were tried. */
  protected async discardAllPrepared(): Promise<void> {
    let failure: unknown;
    for (const record of [...this.#prepared.keys()]) await this.discardPreparedNewSession(record).catch((error: unknown) => (failure ??= error));
    if (failure !== undefined) throw failure;
  }

  /**
   * Stages a default-model choice after the leaf: a `temporary` `model_change`, optionally a `thinking_level_change`, then a
   * `default` one. Nothing is written: GJC stages a replacement file beside the transcript, this store appends at promotion.
   */
  async stageDefaultModelSelection(
    model: string,
    thinkingLevel: string | undefined,
    options: { readonly appendThinkingLevel: boolean } = { appendThinkingLevel: false },
  ): Promise<DefaultModelSelectionStage> {
    await this.engine.flush();
    const { entry, leaf, headerExport } = this.revisionSnapshot();
    const stage: DefaultModelSelectionStage = Object.freeze({
      sessionId: this.engine.getSessionId(),
      sessionFile: this.engine.getSessionFile(),
      model,
      thinkingLevel,
      appendThinkingLevel: options.appendThinkingLevel,
      revisions: Object.freeze({ entry, leaf, headerExport }),
    });
    this.#stages.add(stage);
    return stage;
  }

  /**
   * Applies a stage, synchronously, if the session, its entries, leaf and header are as they were when it was staged: the
   * entries are appended (each on disk when its append returns). `unknown` when a write failed after the first.
   */
  promoteDefaultModelSelection(stage: DefaultModelSelectionStage): DefaultModelSelectionPromotion {
    const now = this.revisionSnapshot();
    const { revisions } = stage;
    if (
      !this.#stages.has(stage) ||
      stage.sessionId !== this.engine.getSessionId() ||
      stage.sessionFile !== this.engine.getSessionFile() ||
      revisions.entry !== now.entry ||
      revisions.leaf !== now.leaf ||
      revisions.headerExport !== now.headerExport
    ) {
      return { kind: "not_promoted" };
    }
    this.#stages.delete(stage);
    const asError = (error: unknown) => (error instanceof Error ? error : new Error(String(error)));
    try {
      hooks.checkPersisted(this.engine);
    } catch (error) {
      return { kind: "not_promoted", error: asError(error) };
    }
    // From the first append on, memory holds what it appended: a failure now leaves the file short of it.
    try {
      this.appendModelChange(stage.model, "temporary");
      if (stage.appendThinkingLevel) this.appendThinkingLevelChange(stage.thinkingLevel);
      this.appendModelChange(stage.model, "default");
      hooks.checkPersisted(this.engine);
    } catch (error) {
      return { kind: "unknown", error: asError(error) };
    }
    return { kind: "promoted" };
  }

  /** Drops a stage: it can no longer be promoted. Nothing was written for it. */
  async discardDefaultModelSelectionStage(stage: DefaultModelSelectionStage): Promise<void> {
    this.#stages.delete(stage);
  }

  /** A snapshot of which session (and leaf) this manager is on, for {@link restoreRollbackState}. Flushes first. */
  async captureRollbackState(): Promise<SessionManagerStateSnapshot> {
    const engine = this.engine;
    await engine.flush();
    const snapshot: SessionManagerStateSnapshot = Object.freeze({
      sessionId: engine.getSessionId(),
      sessionFile: engine.getSessionFile(),
      leafId: engine.getLeafId(),
    });
    snapshotEngines.set(snapshot, engine);
    return snapshot;
  }

  /**
   * Comes back to the snapshot's session: the same one (its leaf put back), a session in memory swapped back, or the
   * snapshot's file reopened; artifact bindings are reset. @throws what `setSessionFile` throws
   */
  async restoreRollbackState(snapshot: SessionManagerStateSnapshot): Promise<void> {
    const engine = snapshotEngines.get(snapshot);
    if (engine === undefined) throw new GjcFaceError("prepared_session_unavailable", "Not a rollback snapshot of this store.");
    this.resetArtifactBindings();
    const onSnapshot = (candidate: Engine) => candidate.getSessionId() === snapshot.sessionId && candidate.getSessionFile() === snapshot.sessionFile;
    if (!onSnapshot(this.engine)) {
      // An engine manager that switched files in place is on another session now; one in memory never does.
      if (!engine.isPersisted() && onSnapshot(engine)) this.swapEngine(engine);
      else await this.engine.setSessionFile(snapshot.sessionFile!);
      this.bumpRevisions();
    }
    if (this.engine.getLeafId() === snapshot.leafId) return;
    if (snapshot.leafId === null) this.engine.resetLeaf();
    else this.engine.branch(snapshot.leafId);
    this.bumpRevisions(["leaf"]);
  }

  /**
   * Deletes `sessionPath` and its artifacts: a session file of this manager's directory that is not the current one (a fork
   * whose readiness failed, say); a missing file is fine.
   * @throws GjcFaceError `active_session`, `session_not_contained`
   */
  async discardUncommittedSession(sessionPath: string): Promise<void> {
    await this.engine.flush();
    // Compared with their directories' links resolved, so another spelling of the current file is still the current file.
    const target = canonicalPathOf(sessionPath);
    const active = this.engine.getSessionFile();
    if (active !== undefined && target === canonicalPathOf(active)) throw new GjcFaceError("active_session", "Refusing to discard the active session.");
    await this.#deleteContained(target);
  }

  /**
   * Deletes the session `sessionPath` of this manager's directory and its artifacts; when it is the current one, the manager
   * first moves to a new session. A missing file is fine. @throws GjcFaceError `session_not_contained`
   */
  async dropSession(sessionPath: string): Promise<void> {
    const target = path.resolve(sessionPath);
    if (target === this.engine.getSessionFile()) {
      await this.engine.newSession();
      this.resetArtifactBindings();
    }
    await this.#deleteContained(target);
  }

  /** Unlinks a session file of this manager's directory by descriptor, then its artifacts and line index. */
  async #deleteContained(target: string): Promise<void> {
    const dir = this.engine.getSessionDir();
    // A link among the target's directories is resolved first, so a name that only looks contained is refused.
    if (dir === "" || path.dirname(canonicalPathOf(target)) !== canonicalDirectoryOf(dir) || !target.endsWith(".jsonl")) {
      throw new GjcFaceError("session_not_contained", "Refusing to delete a session outside the configured session directory.");
    }
    await removeSessionFiles(target);
  }
}

/** Unlinks the session file `target` by descriptor (a missing one is fine), then its artifacts directory and line index. */
export async function removeSessionFiles(target: string): Promise<void> {
  const dir = path.dirname(target);
  const parent = SecureDir.openRoot(dir);
  try {
    parent.unlink(path.basename(target));
  } catch (error) {
    if (!(error instanceof SecureFsError && error.code === "not_found")) throw error;
  } finally {
    parent.close();
  }
  await removeArtifactsOf(target);
  await removeLineIndex(new FileSessionStorage(dir), target);
}

/**
 * Deletes a session from the CLI picker's managed listing: only a transcript whose header names an absolute workspace,
 * lying in that workspace's managed scope or below its `.gjc/`, is removed (with its line index and artifacts).
 * @throws GjcFaceError `session_not_contained` for an unreadable transcript, a header without a workspace, or a file outside it
 */
export async function deleteManagedCandidate(sessionPath: string): Promise<void> {
  const file = canonicalPathOf(sessionPath);
  const captured = captureTranscript(file);
  if (captured.kind === "error") throw new GjcFaceError("session_not_contained", `Could not delete managed session: ${captured.reason}`);
  let cwd: unknown;
  try {
    captured.snapshot.forEachLine((line) => {
      cwd = (JSON.parse(line) as { cwd?: unknown }).cwd;
      return false;
    });
  } finally {
    captured.snapshot.close();
  }
  if (typeof cwd !== "string" || !path.isAbsolute(cwd)) throw new GjcFaceError("session_not_contained", "Session has no valid workspace header.");
  const project = path.join(cwd, ".gjc") + path.sep;
  let scope: string | undefined;
  try {
    scope = Engine.getDefaultSessionDirReadOnly(cwd);
  } catch {
    scope = undefined;
  }
  if (path.dirname(file) !== scope && !file.startsWith(project)) {
    throw new GjcFaceError("session_not_contained", "Not authorized to delete a session outside its workspace's managed scope.");
  }
  await removeSessionFiles(file);
}
