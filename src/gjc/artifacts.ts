/**
 * A session's artifacts directory: the transcript's path without `.jsonl`, beside it, created
 * owner-only by descriptor below the session directory like everything else the store writes.
 * Tool outputs are `<n>.<toolType>.log`, `<n>` reserved by a no-replace `.artifact-id-<n>` claim
 * (so managers and processes sharing the directory never hand out one id twice) and the content
 * published whole (temporary file, sync, no-replace rename). A fork's copy of the tree is bounded
 * as a migration's (depth, entries, bytes; no links, no foreign or shared files) and staged under
 * a hidden name, published only when the fork commits.
 */
import { createHash } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

import { SecureDir, SecureFsError, type SecureLock } from "../fs/index.js";
import { copyTree, DEFAULT_ARTIFACT_LIMITS, snapshotArtifactTree } from "../migration/copy.js";
import { runLater } from "../migration/waits.js";
import { GjcFaceError } from "./face-errors.js";
import { StorageError } from "../storage/index.js";
import { lockWriter } from "../storage/writer-lock.js";

/** Tool outputs above this are cut, with a notice saying how much was left out. */
export const ARTIFACT_MAX_BYTES = 10 * 1024 * 1024;

const CLAIM_PREFIX = ".artifact-id-";
const NAMED = /^[A-Za-z0-9_.-]+$/;

/** Where GJC's app finds a tool output moved out of the transcript: the artifact, and proof of its bytes. */
export interface EvictedToolOutputHandle {
  v: 1;
  artifactId: string;
  uri: string;
  encoding: "utf-8";
  bytes: number;
  sha256: string;
  complete: true;
}

/** How {@link SessionArtifacts.publishExactText} ended. */
export type ArtifactPublishOutcome =
  | { outcome: "saved"; handle: EvictedToolOutputHandle }
  | { outcome: "incomplete"; bytes: number; maxBytes: number }
  | { outcome: "unavailable"; diagnostic: string }
  | { outcome: "failed"; diagnostic: string };

const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");
const TOOL_TYPE = /^[A-Za-z0-9_-]+$/;
const REMOVE_LIMITS = { maxDepth: DEFAULT_ARTIFACT_LIMITS.maxDepth, maxEntries: DEFAULT_ARTIFACT_LIMITS.maxEntries };

/** A fork's artifact copy is staged as `.fork-<final artifacts directory name>.artifacts` beside the target. */
const FORK_STAGING_PREFIX = ".fork-";
const FORK_STAGING_SUFFIX = ".artifacts";

/** The artifacts directory of the session file `sessionFile`. */
export function artifactsDirOf(sessionFile: string): string {
  return sessionFile.replace(/\.jsonl$/, "");
}

/** The largest artifact id used in `names` (published outputs and claims), -1 when none. */
function largestId(names: readonly string[]): number {
  let largest = -1;
  for (const name of names) {
    const match = /^(\d+)\..*\.log$/.exec(name) ?? /^\.artifact-id-(\d+)$/.exec(name);
    if (match === null) continue;
    const id = Number(match[1]);
    if (Number.isSafeInteger(id) && id > largest) largest = id;
  }
  return largest;
}

/** `content` cut to at most `max` UTF-8 bytes on a character boundary, with a notice when cut. */
function bounded(content: string, max: number): string {
  const bytes = Buffer.from(content, "utf8");
  if (bytes.byteLength <= max) return content;
  let end = max;
  // Back up to the start of a character: continuation bytes are 10xxxxxx.
  while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end -= 1;
  return `${bytes.subarray(0, end).toString("utf8")}\n[artifact truncated after ${end} bytes; omitted ${bytes.byteLength - end} bytes]\n`;
}

/**
 * The artifacts of one session, in `dir` (its parent must be an owner-only directory: the session
 * directory, or a private temporary one for a session in memory). Each operation opens the parent
 * by descriptor and the directory below it, so a swapped link is refused, never followed.
 */
export class SessionArtifacts {
  /** The directory's path (it may not exist until the first artifact). */
  readonly dir: string;
  /** Whether paths are handed out: GJC's managed destinations expose ids only. */
  readonly #exposePaths: boolean;
  /** Whether `dir` is itself the trusted root (a private temporary directory made owner-only beforehand). */
  readonly #isRoot: boolean;

  /**
   * @param dir the artifacts directory; `options.exposePaths`: hand out paths with ids (explicit destinations);
   *   `options.isRoot`: `dir` exists and is opened as a root, its parent never (a temporary directory's parent is shared)
   */
  constructor(dir: string, options: { exposePaths: boolean; isRoot?: boolean }) {
    this.dir = dir;
    this.#exposePaths = options.exposePaths;
    this.#isRoot = options.isRoot === true;
  }

  #open<T>(use: (dir: SecureDir) => T, create: boolean): T {
    if (this.#isRoot) {
      const root = SecureDir.openRoot(this.dir);
      try {
        return use(root);
      } finally {
        root.close();
      }
    }
    // An artifact may come before the session's first write, which would have made its directory (owner-only) too.
    const parent = SecureDir.openRoot(path.dirname(this.dir), create ? { create: true } : {});
    try {
      const dir = parent.openDir(path.basename(this.dir), create ? { create: true } : {});
      try {
        return use(dir);
      } finally {
        dir.close();
      }
    } finally {
      parent.close();
    }
  }

  /** Claims the next id no manager or process sharing the directory has. */
  #claim(dir: SecureDir): string {
    let id = largestId(dir.list().map((entry) => entry.name)) + 1;
    for (;;) {
      try {
        dir.writeFileAtomic(`${CLAIM_PREFIX}${id}`, new Uint8Array(), { noReplace: true });
        return String(id);
      } catch (error) {
        if (!(error instanceof SecureFsError) || error.code !== "already_exists") throw error;
        id += 1;
      }
    }
  }

  /** Reserves an id for a `toolType` output: `{id, path}` (`{id}` where paths are not exposed). */
  async allocatePath(toolType: string): Promise<{ id: string; path?: string }> {
    checkToolType(toolType);
    const id = this.#open((dir) => this.#claim(dir), true);
    return this.#exposePaths ? { id, path: path.join(this.dir, `${id}.${toolType}.log`) } : { id };
  }

  /** Publishes `content` (cut past {@link ARTIFACT_MAX_BYTES}) as a new `toolType` output. @returns its id */
  async save(content: string, toolType: string, options: { maxBytes?: number } = {}): Promise<string> {
    checkToolType(toolType);
    const text = bounded(content, Math.max(0, options.maxBytes ?? ARTIFACT_MAX_BYTES));
    return this.#open((dir) => {
      const id = this.#claim(dir);
      dir.writeFileAtomic(`${id}.${toolType}.log`, Buffer.from(text, "utf8"), { noReplace: true });
      return id;
    }, true);
  }

  /**
   * Publishes `text` exactly (never cut) as a new `toolType` artifact and reads it back: `saved` with a handle proving its
   * bytes, `incomplete` past `maxBytes`, `unavailable` when persistence is off, `failed` (nothing left) otherwise.
   */
  async publishExactText(text: string, options: { persist?: boolean; maxBytes?: number; toolType?: string } = {}): Promise<ArtifactPublishOutcome> {
    const bytes = Buffer.from(text, "utf8");
    const maxBytes = Math.max(0, options.maxBytes ?? ARTIFACT_MAX_BYTES);
    if (options.persist === false) return { outcome: "unavailable", diagnostic: "artifact persistence disabled" };
    if (bytes.byteLength > maxBytes) return { outcome: "incomplete", bytes: bytes.byteLength, maxBytes };
    const toolType = options.toolType ?? "evicted";
    let name: string | undefined;
    try {
      checkToolType(toolType);
      const digest = sha256(bytes);
      const id = this.#open((dir) => {
        const claimed = this.#claim(dir);
        name = `${claimed}.${toolType}.log`;
        dir.writeFileAtomic(name, bytes, { noReplace: true });
        const file = dir.openFile(name);
        try {
          if (sha256(file.readAll({ maxBytes: bytes.byteLength })) !== digest)
            throw new StorageError("read_failed", `artifact ${name} does not read back as published`);
        } finally {
          file.close();
        }
        return claimed;
      }, true);
      return {
        outcome: "saved",
        handle: { v: 1, artifactId: id, uri: `artifact://${id}`, encoding: "utf-8", bytes: bytes.byteLength, sha256: digest, complete: true },
      };
    } catch (error) {
      if (name !== undefined) await this.removeNamedBestEffort(name);
      return { outcome: "failed", diagnostic: error instanceof Error ? error.message : String(error) };
    }
  }

  /** Removes the artifact file `filename` (a plain name). @returns whether it is gone */
  async removeNamedBestEffort(filename: string): Promise<boolean> {
    if (!NAMED.test(filename) || filename === "." || filename === "..") return false;
    try {
      this.#open((dir) => dir.unlink(filename), false);
      return true;
    } catch (error) {
      return error instanceof SecureFsError && error.code === "not_found";
    }
  }

  /** The names in the directory (claims included); `[]` when it does not exist. */
  async listFiles(): Promise<string[]> {
    try {
      return this.#open((dir) => dir.list().map((entry) => entry.name), false);
    } catch (error) {
      if (error instanceof SecureFsError && error.code === "not_found") return [];
      throw error;
    }
  }

  /** Whether output `id` exists. */
  async exists(id: string): Promise<boolean> {
    return (await this.getPath(id)) !== null;
  }

  /** The path of output `id`, or `null`. */
  async getPath(id: string): Promise<string | null> {
    const name = (await this.listFiles()).find((file) => file.startsWith(`${id}.`) && file.endsWith(".log"));
    return name === undefined ? null : path.join(this.dir, name);
  }
}

function checkToolType(toolType: string): void {
  if (typeof toolType !== "string" || !TOOL_TYPE.test(toolType)) throw new GjcFaceError("artifacts_unavailable", "Unsafe artifact tool type");
}

/** A private temporary directory for the artifacts of a session in memory, and its removal. */
export function ephemeralArtifacts(): { artifacts: SessionArtifacts; remove: () => Promise<void> } {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "gjc-session-artifacts-"));
  const artifacts = new SessionArtifacts(root, { exposePaths: true, isRoot: true });
  return { artifacts, remove: () => fs.promises.rm(root, { recursive: true, force: true }) };
}

/**
 * Copies the artifacts of `sourceFile` for the fork `targetFile` (same or another session
 * directory) into a hidden staging name beside the target, bounded as a migration copy.
 * @returns the publish step (a no-replace rename to the target's artifacts directory) and the discard step; `undefined` when the source has none
 * @throws MigrationError `artifact_capacity_exceeded`, `unsafe_artifacts`, `source_changed`
 */
export async function stageArtifactCopy(sourceFile: string, targetFile: string): Promise<{ publish: () => void; discard: () => Promise<void> } | undefined> {
  const sourceParent = SecureDir.openRoot(path.dirname(sourceFile));
  const target = SecureDir.openRoot(path.dirname(targetFile));
  const name = path.basename(artifactsDirOf(sourceFile));
  const finalName = path.basename(artifactsDirOf(targetFile));
  const staging = `${FORK_STAGING_PREFIX}${finalName}${FORK_STAGING_SUFFIX}`;
  const opened: SecureDir[] = [];
  let lock: SecureLock | undefined;
  try {
    await reapKilledForkStagings(target);
    const snapshot = snapshotArtifactTree(sourceParent, name, DEFAULT_ARTIFACT_LIMITS);
    if (snapshot === undefined) {
      target.close();
      return undefined;
    }
    // Held until the staging is published or discarded: a staging whose lock is free was left by a killed fork.
    lock = lockWriter(target, staging);
    const into = target.openDir(staging, { create: true });
    opened.push(into);
    await runLater(
      copyTree(
        sourceParent,
        name,
        snapshot,
        into,
        opened,
        () => undefined,
        () => undefined,
      ),
    );
    for (const dir of opened) dir.sync();
  } catch (error) {
    if (lock !== undefined) await target.removeTreeAsync(staging, REMOVE_LIMITS).catch(() => undefined);
    lock?.release();
    target.close();
    throw error;
  } finally {
    for (const dir of opened) dir.close();
    sourceParent.close();
  }
  const held = lock;
  let settled = false;
  return {
    publish() {
      if (settled) return;
      settled = true;
      try {
        target.publishNoReplace(staging, finalName);
      } finally {
        held.release();
        target.close();
      }
    },
    async discard() {
      if (settled) return;
      settled = true;
      try {
        await target.removeTreeAsync(staging, REMOVE_LIMITS);
      } catch (error) {
        if (!(error instanceof SecureFsError && error.code === "not_found")) throw error;
      } finally {
        held.release();
        target.close();
      }
    },
  };
}

/**
 * Removes the fork stagings of `dir` that no fork holds any more: each fork holds its staging's lock from the copy to the
 * publish or discard, and the kernel lets it go when the process dies, so a staging whose lock can be taken was left by a
 * process killed between prepare and commit. One that cannot be removed now is left for the next fork.
 */
async function reapKilledForkStagings(dir: SecureDir): Promise<void> {
  for (const entry of dir.list()) {
    if (entry.type !== "directory" || !entry.name.startsWith(FORK_STAGING_PREFIX) || !entry.name.endsWith(FORK_STAGING_SUFFIX)) continue;
    let lock: SecureLock;
    try {
      lock = lockWriter(dir, entry.name);
    } catch {
      continue; // a fork under way holds it
    }
    try {
      await dir.removeTreeAsync(entry.name, REMOVE_LIMITS);
    } catch {
      // Gone meanwhile, or refused: nothing of a session depends on it.
    } finally {
      lock.release();
    }
  }
}

/** Removes the artifacts directory of `sessionFile` by descriptor; a missing one is fine. */
export async function removeArtifactsOf(sessionFile: string): Promise<void> {
  let parent: SecureDir;
  try {
    parent = SecureDir.openRoot(path.dirname(sessionFile));
  } catch (error) {
    if (error instanceof SecureFsError && error.code === "not_found") return;
    throw error;
  }
  try {
    await parent.removeTreeAsync(path.basename(artifactsDirOf(sessionFile)), REMOVE_LIMITS);
  } catch (error) {
    if (!(error instanceof SecureFsError && error.code === "not_found")) throw error;
  } finally {
    parent.close();
  }
}
