/**
 * AgentRoot: the agent directory opened once, by descriptor, and everything below it reached
 * from that descriptor. Opening it is the one place a path is resolved (its ancestors
 * canonicalised and checked by the addon, the directory itself never a link and owner-only);
 * after that every managed directory (sessions root, scopes, breadcrumbs, blobs, migration
 * staging) is opened one verified name at a time from the held descriptor, so no later
 * rename or link swap of a path can redirect an operation.
 */
import fs from "node:fs";
import path from "node:path";

import { SecureDir, SecureFsError, type OpenDirOptions, type SecureFsErrorCode } from "../fs/index.js";
import { ManagedSessionStorage, type StorageLogger } from "../storage/index.js";

/** Options of {@link AgentRoot.open}. */
export interface AgentRootOptions {
  /**
   * Prepare for writing: create the agent directory (and below it, what {@link AgentRoot.openDir}
   * asks for) owner-only when missing, and repair mode or ACL deviations of directories the
   * effective user owns (recorded in {@link AgentRoot.repaired}). Objects of another owner, of
   * the wrong type or behind a link are refused either way, never adopted.
   */
  readonly write?: boolean;
}

/** fs-layer codes that only mean "permissions deviate" on an object we own: repairable. */
export const REPAIRABLE_CODES: ReadonlySet<SecureFsErrorCode> = new Set(["mode_mismatch", "acl_present", "acl_malformed"]);

/** One directory name, or a relative path as directory names. */
export type DirNames = string | readonly string[];

/**
 * The agent directory, held. Read mode creates and changes nothing: the agent directory must
 * be the user's (a looser mode an older tool left is read through), every directory below is
 * verified owner-only unless asked for as `readThrough`; write mode creates and repairs what
 * the user owns. Closing it closes only its own
 * descriptor: directories and storages it handed out stay usable until they are closed.
 */
export class AgentRoot {
  /** The agent directory's path with its ancestors canonicalised; for messages, never re-resolved. */
  readonly path: string;
  /** The held agent directory. */
  readonly dir: SecureDir;
  readonly #write: boolean;
  readonly #repaired: string[];

  private constructor(dir: SecureDir, write: boolean, repaired: string[]) {
    this.dir = dir;
    this.path = dir.path;
    this.#write = write;
    this.#repaired = repaired;
  }

  /**
   * Opens the agent directory `agentDir` (absolute or resolved against the cwd). Links in its
   * ancestors are resolved once ({@link canonicalizeTrustedPath}); the directory itself must
   * not be a link.
   * @throws SecureFsError `not_found` (read mode, no agent directory), `symlink_refused`,
   *   `owner_mismatch`, `insecure_ancestor`, `mode_mismatch` (read mode), ...
   */
  static open(agentDir: string, options: AgentRootOptions = {}): AgentRoot {
    const where = canonicalizeTrustedPath(agentDir);
    const repaired: string[] = [];
    const write = options.write === true;
    // Read mode reads through an agent directory an older tool made 0755 (it is ours and
    // no link); everything read below it is verified in full.
    const dir = write
      ? openOrRepair(() => SecureDir.openRoot(where, { create: true }), () => SecureDir.openRoot(where, { repair: true }), where, repaired)
      : SecureDir.openRoot(where, { owned: true });
    return new AgentRoot(dir, write, repaired);
  }

  /** {@link AgentRoot.open} in read mode, or `undefined` when there is no agent directory. */
  static openIfExists(agentDir: string): AgentRoot | undefined {
    try {
      return AgentRoot.open(agentDir);
    } catch (error) {
      if (error instanceof SecureFsError && error.code === "not_found") return undefined;
      throw error;
    }
  }

  /** Whether this root was opened for writing. */
  get writable(): boolean {
    return this.#write;
  }

  /** Directories whose mode or ACLs were repaired through this root, in order. */
  get repaired(): readonly string[] {
    return this.#repaired;
  }

  /**
   * Opens the directory `names` below the agent directory, one verified name at a time from
   * the held descriptor. Write mode creates missing directories and repairs permission
   * deviations of the user's own; read mode refuses any deviation, except that with
   * `readThrough` the last directory only has to be the user's (see
   * {@link OpenDirOptions.owned}: for a directory whose entries are verified when read).
   * @throws SecureFsError as {@link SecureDir.openDir}
   */
  openDir(names: DirNames, options: { readonly readThrough?: boolean } = {}): SecureDir {
    const list = typeof names === "string" ? [names] : names;
    if (list.length === 0) throw new SecureFsError("invalid_argument", { operation: "openDir", path: this.path });
    if (!this.#write) return this.dir.openDir(list, options.readThrough === true ? { owned: true } : {});
    let current = this.dir;
    for (const name of list) {
      const parent = current;
      const where = path.join(parent.path, name);
      try {
        current = openOrRepair(() => parent.openDir(name, { create: true }), () => parent.openDir(name, { repair: true }), where, this.#repaired);
      } finally {
        if (parent !== this.dir) parent.close();
      }
    }
    return current;
  }

  /** {@link AgentRoot.openDir}, or `undefined` when (read mode) a directory on the way is missing. */
  openDirIfExists(names: DirNames, options: { readonly readThrough?: boolean } = {}): SecureDir | undefined {
    try {
      return this.openDir(names, options);
    } catch (error) {
      if (error instanceof SecureFsError && error.code === "not_found") return undefined;
      throw error;
    }
  }

  /**
   * Managed session storage on the directory `names` below the agent directory, opened as
   * {@link AgentRoot.openDir} does. The storage owns that directory's descriptor (its `close()`
   * closes it).
   */
  storage(names: DirNames, options: { readonly logger?: StorageLogger } = {}): ManagedSessionStorage {
    return new ManagedSessionStorage(this.openDir(names), options.logger === undefined ? {} : { logger: options.logger });
  }

  /**
   * The directory names that lead from the agent directory to `target`, or `undefined` when
   * `target` is not below it. `agentDir` is the spelling the caller gave (a `target` spelled
   * from it is recognised before any link is resolved, so a link inside the agent directory
   * is never followed to decide); then the canonical spellings are compared.
   */
  namesOf(target: string, agentDir: string = this.path): string[] | undefined {
    return namesBelowAgentDir(this.path, agentDir, target);
  }

  /** Closes the agent directory's descriptor. Idempotent. */
  close(): void {
    this.dir.close();
  }
}

/**
 * The directory names that lead from the agent directory to `target`, or `undefined` when
 * `target` is not below it: `canonical` is the agent directory as {@link canonicalizeTrustedPath}
 * gives it, `given` the spelling the caller used. A `target` spelled from either is recognised
 * before any link is resolved (so a link inside the agent directory is never followed to
 * decide); then `target` with its ancestors canonicalised is compared.
 */
export function namesBelowAgentDir(canonical: string, given: string, target: string): string[] | undefined {
  const absolute = path.resolve(target);
  for (const [base, below] of [
    [path.resolve(given), absolute],
    [canonical, absolute],
    [canonical, canonicalizeTrustedPath(absolute)],
  ] as const) {
    const relative = path.relative(base, below);
    if (relative === "") return [];
    if (relative.startsWith("..") || path.isAbsolute(relative)) continue;
    return relative.split(path.sep);
  }
  return undefined;
}

/** Opens with `open`; on a repairable deviation opens with `repair` and records `where`. */
export function openOrRepair(open: () => SecureDir, repair: () => SecureDir, where: string, repaired: string[]): SecureDir {
  try {
    return open();
  } catch (error) {
    if (!(error instanceof SecureFsError) || !REPAIRABLE_CODES.has(error.code)) throw error;
  }
  const dir = repair();
  repaired.push(where);
  return dir;
}

/**
 * `target` with its existing ancestors replaced by their real path and its last component
 * kept as given (a missing tail is re-appended verbatim). The secure layer refuses links at
 * and below a trusted root, so a link in a trusted prefix (macOS `/var`, a linked home) is
 * resolved here, once, while a link at `target` itself stays a link and is refused.
 */
export function canonicalizeTrustedPath(target: string): string {
  const absolute = path.resolve(target);
  const parent = path.dirname(absolute);
  if (parent === absolute) return absolute;
  const tail: string[] = [path.basename(absolute)];
  let current = parent;
  for (;;) {
    try {
      return path.join(fs.realpathSync.native(current), ...tail.reverse());
    } catch (error) {
      const up = path.dirname(current);
      if ((error as NodeJS.ErrnoException).code !== "ENOENT" || up === current) return absolute;
      tail.push(path.basename(current));
      current = up;
    }
  }
}
