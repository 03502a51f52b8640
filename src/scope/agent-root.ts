/**
 * AgentRoot: the agent directory opened once by descriptor, the one place a path is resolved. Everything
 * below is opened one verified name at a time from it, so no later rename or link swap redirects.
 */
import fs from "node:fs";
import path from "node:path";

import { SecureDir, SecureFsError, unlessMissing, type EntryPath, type OpenDirOptions, type SecureFsErrorCode } from "../fs/index.js";
import { ManagedSessionStorage, type StorageLogger } from "../storage/index.js";

/** Options of {@link AgentRoot.open}. */
export interface AgentRootOptions {
  /** Create missing directories owner-only and repair mode or ACL deviations of the user's own ({@link AgentRoot.repaired}); others are refused. */
  readonly write?: boolean;
}

/** fs-layer codes that only mean "permissions deviate" on an object we own: repairable. */
const REPAIRABLE_CODES: ReadonlySet<SecureFsErrorCode> = new Set(["mode_mismatch", "acl_present", "acl_malformed"]);

/**
 * The agent directory, held. Read mode changes nothing and verifies in full: a loose or ACL-bearing
 * directory is refused with the fs-layer code a writer meets before it repairs (`mode_mismatch`,
 * `acl_present`), so no reader goes through what another user could have changed. Write mode
 * creates and repairs what the user owns. Closing closes only its own descriptor.
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
   * Opens `agentDir`; links in its ancestors are resolved once ({@link canonicalizeTrustedPath}), it must not be one.
   * @throws SecureFsError `not_found` (read mode), `symlink_refused`, `owner_mismatch`, `insecure_ancestor`, ...
   */
  static open(agentDir: string, options: AgentRootOptions = {}): AgentRoot {
    return AgentRoot.openCanonical(canonicalizeTrustedPath(agentDir), options);
  }

  /** {@link AgentRoot.open} of a path the caller has already passed through {@link canonicalizeTrustedPath}. */
  static openCanonical(where: string, options: AgentRootOptions = {}): AgentRoot {
    const repaired: string[] = [];
    const write = options.write === true;
    const dir = write ? openOrRepair((o) => SecureDir.openRoot(where, o), where, repaired) : SecureDir.openRoot(where);
    return new AgentRoot(dir, write, repaired);
  }

  /** {@link AgentRoot.open} in read mode, or `undefined` when there is no agent directory. */
  static openIfExists(agentDir: string): AgentRoot | undefined {
    return unlessMissing(() => AgentRoot.open(agentDir));
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
   * Opens the directory `names` below, one verified name at a time (write mode: created and repaired).
   * @throws SecureFsError as {@link SecureDir.openDir}
   */
  openDir(names: EntryPath): SecureDir {
    const list = typeof names === "string" ? [names] : names;
    if (list.length === 0) throw new SecureFsError("invalid_argument", { operation: "openDir", path: this.path });
    if (!this.#write) return this.dir.openDir(list);
    let current = this.dir;
    for (const name of list) {
      const parent = current;
      try {
        current = openOrRepair((o) => parent.openDir(name, o), path.join(parent.path, name), this.#repaired);
      } finally {
        if (parent !== this.dir) parent.close();
      }
    }
    return current;
  }

  /** {@link AgentRoot.openDir}, or `undefined` when (read mode) a directory on the way is missing. */
  openDirIfExists(names: EntryPath): SecureDir | undefined {
    return unlessMissing(() => this.openDir(names));
  }

  /** Managed session storage on the directory `names` (opened as {@link AgentRoot.openDir}), owning its descriptor. */
  storage(names: EntryPath, options: { readonly logger?: StorageLogger } = {}): ManagedSessionStorage {
    return new ManagedSessionStorage(this.openDir(names), options.logger === undefined ? {} : { logger: options.logger });
  }

  /** The names leading from the agent directory to `target` ({@link namesBelowAgentDir}), `agentDir` as the caller spelled it. */
  namesOf(target: string, agentDir: string = this.path): string[] | undefined {
    return namesBelowAgentDir(this.path, agentDir, target);
  }

  /** Closes the agent directory's descriptor. Idempotent. */
  close(): void {
    this.dir.close();
  }
}

/** `child` relative to `base` (`""` for `base` itself), or `undefined` when it is not below it. */
export function relativeBelow(base: string, child: string): string | undefined {
  const relative = path.relative(base, child);
  return relative.startsWith("..") || path.isAbsolute(relative) ? undefined : relative;
}

/**
 * The directory names from the agent directory (`canonical`, or as the caller spelled it,
 * `given`) to `target`, or `undefined` when not below it. Both spellings are matched before
 * `target` is canonicalised, so a link inside is never followed to decide.
 */
export function namesBelowAgentDir(canonical: string, given: string, target: string): string[] | undefined {
  const absolute = path.resolve(target);
  for (const [base, below] of [
    [path.resolve(given), absolute],
    [canonical, absolute],
    [canonical, canonicalizeTrustedPath(absolute)],
  ] as const) {
    const relative = relativeBelow(base, below);
    if (relative !== undefined) return relative === "" ? [] : relative.split(path.sep);
  }
  return undefined;
}

/** Opens with `{ create: true }`; on a repairable deviation with `{ repair: true }`, recording `where`. */
export function openOrRepair(open: (options: OpenDirOptions) => SecureDir, where: string, repaired: string[]): SecureDir {
  try {
    return open({ create: true });
  } catch (error) {
    if (!(error instanceof SecureFsError) || !REPAIRABLE_CODES.has(error.code)) throw error;
  }
  const dir = open({ repair: true });
  repaired.push(where);
  return dir;
}

/**
 * `target` with its existing ancestors replaced by their real path, the last component (and a
 * missing tail) kept: a link in a trusted prefix (macOS `/var`, a linked home) is resolved once
 * here, while a link at `target` itself stays one, for the secure layer to refuse.
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
