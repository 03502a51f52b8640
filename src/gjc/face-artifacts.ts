/**
 * The `/gjc` manager's artifacts and drafts. A persisted session's artifacts live in its artifacts
 * directory ({@link SessionArtifacts}); a session in memory gets a private temporary one on
 * demand; a subagent's manager may adopt its parent's artifact manager (any object with GJC's
 * `allocatePath`/`save`), which then answers instead and hides the directory. The unsent editor
 * text is `draft.txt` in the artifacts directory, replaced atomically and read once.
 */
import path from "node:path";

import { SecureDir, SecureFsError } from "../fs/index.js";
import { artifactsDirOf, ephemeralArtifacts, SessionArtifacts } from "./artifacts.js";
import { FaceCore } from "./face-core.js";

/** What the face needs of an adopted artifact manager (GJC's `ArtifactManager` has it). */
export interface ArtifactManagerLike {
  /** Reserves the next id for a `toolType` output (with a path where paths are handed out). */
  allocatePath(toolType: string): Promise<{ id: string; path?: string }>;
  /** Publishes `content` as a new `toolType` output. @returns its id */
  save(content: string, toolType: string): Promise<string>;
}

const DRAFT_FILE = "draft.txt";
/** A draft is an editor's unsent text; anything larger is not one. */
const DRAFT_MAX_BYTES = 64 * 1024 * 1024;

/** Base of the `/gjc` manager holding its artifact and draft methods. */
export abstract class FaceArtifacts extends FaceCore {
  #adopted: ArtifactManagerLike | undefined;
  /** The artifacts of the current file, remade when the file changes. */
  #own: SessionArtifacts | undefined;
  #ephemeral: ReturnType<typeof ephemeralArtifacts> | undefined;
  /** Removals of temporary directories let go; `close()` waits for them. */
  readonly #removing: Promise<void>[] = [];

  /** The artifacts directory of the session file (the file's path without `.jsonl`); `null` in memory and while an artifact manager is adopted. Not created here. */
  getArtifactsDir(): string | null {
    if (this.#adopted !== undefined) return null;
    return this.#fileArtifacts()?.dir ?? null;
  }

  #fileArtifacts(): SessionArtifacts | undefined {
    const file = this.engine.getSessionFile();
    if (file === undefined) return undefined;
    const dir = artifactsDirOf(file);
    if (this.#own?.dir !== dir) this.#own = new SessionArtifacts(dir, { exposePaths: !this.destination.managed });
    return this.#own;
  }

  /** Reserves the next artifact id (`{}` in memory): `{id, path}` for an explicit destination, `{id}` for a managed one; the adopted manager's answer while one is. */
  async allocateArtifactPath(toolType: string): Promise<{ id?: string; path?: string }> {
    if (this.#adopted !== undefined) return this.#adopted.allocatePath(toolType);
    const own = this.#fileArtifacts();
    return own === undefined ? {} : own.allocatePath(toolType);
  }

  /** Publishes `content` as a new `toolType` artifact (a session in memory gets a temporary directory). @returns its id */
  async saveArtifact(content: string, toolType: string): Promise<string | undefined> {
    const manager = await this.ensureArtifactManager();
    return manager?.save(content, toolType);
  }

  /** The path of artifact `id`, as the current artifact manager answers; `null` when there is none or it does not know `id`. */
  async getArtifactPath(id: string): Promise<string | null> {
    const artifacts = this.getArtifactManager() as { getPath?: (id: string) => Promise<string | null> } | null;
    return typeof artifacts?.getPath === "function" ? artifacts.getPath(id) : null;
  }

  /** The adopted artifact manager, else the current file's, else the temporary one if made; `null` when none. */
  getArtifactManager(): ArtifactManagerLike | SessionArtifacts | null {
    return this.#adopted ?? this.#fileArtifacts() ?? this.#ephemeral?.artifacts ?? null;
  }

  /** As {@link getArtifactManager}, making the temporary directory of a session in memory. */
  async ensureArtifactManager(): Promise<ArtifactManagerLike | SessionArtifacts | null> {
    const current = this.getArtifactManager();
    if (current !== null) return current;
    this.#ephemeral = ephemeralArtifacts();
    return this.#ephemeral.artifacts;
  }

  /** Shares `manager` (a parent's) from now on. GJC's second argument names the parent of a staged attempt; this store stages no attempts, so it is not taken. */
  adoptArtifactManager(manager: ArtifactManagerLike): void {
    this.#adopted = manager;
  }

  /** Drops the adoption if `manager` is the adopted one. */
  releaseArtifactManager(manager: ArtifactManagerLike): void {
    if (this.#adopted === manager) this.#adopted = undefined;
  }

  /** Whether `manager` is the adopted, own or temporary artifact manager (by identity, never by path). */
  isArtifactManagerAuthorized(manager: unknown): boolean {
    return manager !== undefined && manager !== null && (manager === this.#adopted || manager === this.#own || manager === this.#ephemeral?.artifacts);
  }

  /** Drops the adopted artifact manager, so the directory answers for the file a transition is validating. */
  stageAdoptedArtifactManagerForTransition(): void {
    this.#adopted = undefined;
  }

  /** Unbinds the temporary artifact directory and removes it in the background. */
  retireEphemeralArtifactsAfterTransition(): void {
    const ephemeral = this.#ephemeral;
    this.#ephemeral = undefined;
    if (ephemeral !== undefined) this.#removing.push(ephemeral.remove().catch(() => undefined));
  }

  /** Waits for the temporary artifact directories let go so far to be removed. */
  protected async ephemeralRetired(): Promise<void> {
    await Promise.all(this.#removing);
  }

  /** Every artifact binding dropped, as after a committed transition. */
  protected resetArtifactBindings(): void {
    this.stageAdoptedArtifactManagerForTransition();
    this.#own = undefined;
  }

  /**
   * GJC's authority over a legacy `<artifacts>/local` tree to migrate into its temporary `local://` root. This store keeps
   * no such tree for managed sessions, so there is never one to migrate: `null` (GJC's app then looks by path and records
   * that nothing needs migrating).
   */
  getManagedLegacyLocalMigrationSource(): null {
    return null;
  }

  /** Keeps the unsent editor text for the next resume: non-empty text writes the session first, then `draft.txt` atomically; empty text removes a stale one. A no-op in memory. */
  async saveDraft(text: string): Promise<void> {
    if (!this.engine.isPersisted()) return;
    const file = this.engine.getSessionFile()!;
    if (text.length === 0) {
      this.#inArtifactsDir(file, false, (dir) => dir.unlink(DRAFT_FILE));
    } else {
      await this.engine.ensureOnDisk();
      this.#inArtifactsDir(file, true, (dir) => dir.writeFileAtomic(DRAFT_FILE, Buffer.from(text, "utf8")));
    }
    this.readOnlyResume = false;
  }

  /** Reads and removes the saved draft. @returns its text, or `null` when there is none */
  async consumeDraft(): Promise<string | null> {
    const file = this.engine.getSessionFile();
    if (!this.engine.isPersisted() || file === undefined) return null;
    const text = this.#inArtifactsDir(file, false, (dir) => {
      const draft = dir.openFile(DRAFT_FILE);
      let bytes: Buffer;
      try {
        bytes = draft.readAll({ maxBytes: DRAFT_MAX_BYTES });
      } finally {
        draft.close();
      }
      dir.unlink(DRAFT_FILE);
      return bytes.toString("utf8");
    });
    return text ?? null;
  }

  /** Runs `use` on the artifacts directory of `file` (made with `create`); `undefined` when it or what `use` opens is missing. */
  #inArtifactsDir<T>(file: string, create: boolean, use: (dir: SecureDir) => T): T | undefined {
    try {
      const parent = SecureDir.openRoot(path.dirname(file));
      try {
        const dir = parent.openDir(path.basename(artifactsDirOf(file)), create ? { create: true } : {});
        try {
          return use(dir);
        } finally {
          dir.close();
        }
      } finally {
        parent.close();
      }
    } catch (error) {
      if (error instanceof SecureFsError && error.code === "not_found") return undefined;
      throw error;
    }
  }
}
