/**
 * Staged subagent attempts: a session that becomes visible only if the attempt is accepted. It is
 * written at `<dir>/.staging/<attempt>.jsonl` (listings never read `.staging`), and published by
 * a no-replace rename to its final name; a rollback removes the published file only while it is
 * still exactly the bytes published. The attempt's artifacts are claimed in the final artifacts
 * directory's own id space (claims are no-replace, so no id is ever remapped) and removed, claims
 * and all, when the attempt is discarded or rolled back.
 */
import fs from "node:fs";
import path from "node:path";

import type { SessionManager as Engine } from "../manager/session-manager.js";
import { removeLineIndex } from "../manager/line-index.js";
import { FileSessionStorage } from "../storage/index.js";
import { SecureDir, SecureFsError } from "../fs/index.js";
import { artifactsDirOf, SessionArtifacts } from "./artifacts.js";
import type { ArtifactManagerLike } from "./face-artifacts.js";
import { GjcFaceError } from "./face-errors.js";
import { FaceTransitions, removeSessionFiles } from "./face-transitions.js";

/** The staging folder's name in a session directory. */
export const STAGING_DIRECTORY = ".staging";

const ATTEMPT_ID = /^[A-Za-z0-9_-]{1,128}$/;

/** The artifacts of one attempt: claimed in the final directory, each remembered so the attempt can take them back. */
export class AttemptArtifacts implements ArtifactManagerLike {
  readonly #target: SessionArtifacts;
  readonly #claimed = new Set<string>();

  constructor(finalSessionFile: string) {
    this.#target = new SessionArtifacts(artifactsDirOf(finalSessionFile), { exposePaths: true });
  }

  /** The final artifacts directory. */
  get dir(): string {
    return this.#target.dir;
  }

  async allocatePath(toolType: string): Promise<{ id: string; path?: string }> {
    const reserved = await this.#target.allocatePath(toolType);
    this.#claimed.add(reserved.id);
    return reserved;
  }

  async save(content: string, toolType: string): Promise<string> {
    const id = await this.#target.save(content, toolType);
    this.#claimed.add(id);
    return id;
  }

  /** Removes every output and claim of this attempt; a missing one is fine. */
  async takeBack(): Promise<void> {
    if (this.#claimed.size === 0) return;
    const names = new Set(await this.#target.listFiles());
    let parent: SecureDir | undefined;
    let dir: SecureDir | undefined;
    try {
      parent = SecureDir.openRoot(path.dirname(this.dir));
      dir = parent.openDir(path.basename(this.dir));
      for (const name of names) {
        const id = /^(\d+)\./.exec(name)?.[1] ?? /^\.artifact-id-(\d+)$/.exec(name)?.[1];
        if (id !== undefined && this.#claimed.has(id)) dir.unlink(name);
      }
      this.#claimed.clear();
    } catch (error) {
      if (!(error instanceof SecureFsError && error.code === "not_found")) throw error;
    } finally {
      dir?.close();
      parent?.close();
    }
  }
}

/** What a staged manager knows of its attempt. */
export interface StagedAttempt {
  finalSessionFile: string;
  stagedSessionFile: string;
  artifacts: AttemptArtifacts;
  state: "open" | "committed" | "finalized" | "discarded";
  /** the bytes published, as last recorded: a rollback removes the final file only while it still holds them */
  publishedBytes?: Buffer;
}

/** Checks an attempt of `finalSessionFile` and makes its staging folder. @returns the staged file @throws GjcFaceError `staged_session_unavailable` */
export function stagedFileFor(finalSessionFile: string, attemptId: string): string {
  if (typeof attemptId !== "string" || !ATTEMPT_ID.test(attemptId)) throw new GjcFaceError("staged_session_unavailable", "Unsafe staged attempt id.");
  const dir = path.dirname(finalSessionFile);
  if (path.basename(dir) === STAGING_DIRECTORY) throw new GjcFaceError("staged_session_unavailable", "Final session path cannot be staged");
  const root = SecureDir.openRoot(dir);
  try {
    root.openDir(STAGING_DIRECTORY, { create: true }).close();
  } finally {
    root.close();
  }
  const staged = path.join(dir, STAGING_DIRECTORY, `${attemptId}.jsonl`);
  if (fs.existsSync(staged)) throw new GjcFaceError("staged_session_unavailable", "Staged session attempt already exists");
  return staged;
}

/** Base of the `/gjc` manager holding staged attempts. */
export abstract class FaceStaged extends FaceTransitions {
  #attempt: StagedAttempt | undefined;

  /** Makes this manager a staged attempt's (its artifacts adopted). */
  protected beginAttempt(attempt: StagedAttempt): void {
    this.#attempt = attempt;
    this.adoptArtifactManager(attempt.artifacts);
  }

  /** Reopens `file` in place of the current session (the current one already closed). */
  protected abstract reopen(file: string): Promise<Engine>;

  /**
   * Publishes the attempt: flushed and closed, moved to its final name by a no-replace rename, and reopened there. On failure
   * the attempt is discarded. Idempotent once committed. @throws GjcFaceError `staged_session_unavailable`
   */
  async commitStaged(options: { deferArtifactFinalize?: boolean } = {}): Promise<void> {
    const attempt = this.#attempt;
    if (attempt === undefined || attempt.state === "discarded") throw new GjcFaceError("staged_session_unavailable", "Staged session is unavailable");
    if (attempt.state !== "open") return;
    try {
      await this.engine.ensureOnDisk();
      await this.engine.close();
      const storage = new FileSessionStorage(path.dirname(attempt.finalSessionFile));
      storage.renameSync(attempt.stagedSessionFile, attempt.finalSessionFile, { noReplace: true });
      await removeLineIndex(new FileSessionStorage(path.dirname(attempt.stagedSessionFile)), attempt.stagedSessionFile);
      attempt.state = "committed";
      attempt.publishedBytes = fs.readFileSync(attempt.finalSessionFile);
      this.swapEngine(await this.reopen(attempt.finalSessionFile));
    } catch (error) {
      if (attempt.state === "open") await this.discardStaged().catch(() => undefined);
      throw error;
    }
    if (options.deferArtifactFinalize !== true) this.finalizeStagedCommit();
  }

  /** Keeps the published attempt: its artifacts are the session's from now on, and the adoption ends. */
  finalizeStagedCommit(): void {
    const attempt = this.#attempt;
    if (attempt?.state !== "committed") return;
    attempt.state = "finalized";
    this.releaseArtifactManager(attempt.artifacts);
  }

  /** Records the published file's bytes again (after appends made past the commit); a rollback compares against them. */
  async refreshStagedCommitSnapshot(): Promise<void> {
    const attempt = this.#attempt;
    if (attempt?.state !== "committed") return;
    await this.engine.flush();
    attempt.publishedBytes = fs.readFileSync(attempt.finalSessionFile);
  }

  /** Takes a published attempt back: the final file only while it holds exactly the recorded bytes, and the attempt's artifacts. */
  async rollbackCommittedStaged(): Promise<void> {
    const attempt = this.#attempt;
    if (attempt?.state !== "committed") return;
    attempt.state = "discarded";
    await this.engine.close();
    const now = fs.existsSync(attempt.finalSessionFile) ? fs.readFileSync(attempt.finalSessionFile) : undefined;
    if (now !== undefined && attempt.publishedBytes !== undefined && now.equals(attempt.publishedBytes)) {
      const parent = SecureDir.openRoot(path.dirname(attempt.finalSessionFile));
      try {
        parent.unlink(path.basename(attempt.finalSessionFile));
      } finally {
        parent.close();
      }
      await removeLineIndex(new FileSessionStorage(path.dirname(attempt.finalSessionFile)), attempt.finalSessionFile);
    }
    await attempt.artifacts.takeBack();
  }

  /** Drops an unpublished attempt: its staged file and its artifacts. Idempotent. */
  async discardStaged(): Promise<void> {
    const attempt = this.#attempt;
    if (attempt === undefined || attempt.state !== "open") return;
    attempt.state = "discarded";
    const errors: unknown[] = [];
    await this.engine.close().catch((error: unknown) => errors.push(error));
    await removeSessionFiles(attempt.stagedSessionFile).catch((error: unknown) => errors.push(error));
    await attempt.artifacts.takeBack().catch((error: unknown) => errors.push(error));
    if (errors.length > 0) throw new AggregateError(errors, "Staged session cleanup failed.");
  }
}
