/**
 * Who drives the process cwd, and each manager's cwd transitions against the tools running in it.
 * `process.chdir` and whatever an app caches by cwd are process-wide, so at most one live manager
 * owns them (held weakly: a collected owner is no owner). Per manager, transitions run one at a
 * time in call order, and tools run under shared read leases: a transition waits for the leases
 * granted before it, leases asked for after it wait for it, and both are re-entrant within their
 * own async context. Nothing here touches the disk but the identity checks of a target directory.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import fs from "node:fs";

import { GjcFaceError } from "./face-errors.js";

/** A directory's identity as GJC's app pins it: the device and inode of a bigint stat. */
export interface DirectoryIdentity {
  dev: bigint;
  ino: bigint;
}

let owner: WeakRef<object> | undefined;

/** Records `manager` as the process-cwd owner unless another live one is. @returns whether `manager` owns it now */
export function claimOwnership(manager: object): boolean {
  const current = owner?.deref();
  if (current !== undefined && current !== manager) return false;
  owner = new WeakRef(manager);
  return true;
}

/** Whether `manager` owns the process cwd. */
export function isOwner(manager: object): boolean {
  return owner !== undefined && owner.deref() === manager;
}

/** Gives the claim up if `manager` holds it. */
export function releaseOwnership(manager: object): void {
  if (isOwner(manager)) owner = undefined;
}

/** @throws GjcFaceError `cwd_identity_changed` unless `process.cwd()` is the directory `expected` names */
export async function assertCwdIdentity(expected: DirectoryIdentity): Promise<void> {
  const cwd = process.cwd();
  const stat = await fs.promises.stat(cwd, { bigint: true });
  if (stat.dev !== expected.dev || stat.ino !== expected.ino) {
    throw new GjcFaceError("cwd_identity_changed", `Refusing to rescope: the identity of the working directory ${cwd} changed`);
  }
}

/** Opens `dir` read-only as a directory, refusing a symlink at its last component (except on Windows, which has no `O_NOFOLLOW`). */
export async function openDirectoryNoFollow(dir: string): Promise<fs.promises.FileHandle> {
  const { O_RDONLY, O_DIRECTORY, O_NOFOLLOW } = fs.constants;
  const flags = O_RDONLY | (O_DIRECTORY ?? 0) | (process.platform === "win32" ? 0 : (O_NOFOLLOW ?? 0));
  return fs.promises.open(dir, flags);
}

/** The marks an async context carries: which transitions and leases it runs inside. */
interface CwdContext {
  writers: ReadonlySet<CwdTransitions>;
  readers: ReadonlySet<CwdTransitions>;
}

const context = new AsyncLocalStorage<CwdContext>();

function within(kind: keyof CwdContext, transitions: CwdTransitions): CwdContext {
  const current = context.getStore() ?? { writers: new Set(), readers: new Set() };
  return { ...current, [kind]: new Set([...current[kind], transitions]) };
}

/** One manager's cwd transitions and read leases; see the module comment. */
export class CwdTransitions {
  #generation = 0;
  /** Settles when the last queued transition has (never rejects). */
  #tail: Promise<void> = Promise.resolve();
  #pendingWriters = 0;
  #readers = 0;
  /** Wakes a writer waiting for the leases to drain. */
  #drained: (() => void) | undefined;
  /** Wakes leases waiting for the queued writers. */
  #writersIdle: Promise<void> = Promise.resolve();
  #releaseWritersIdle: (() => void) | undefined;

  /** Bumped once per committed move. */
  get generation(): number {
    return this.#generation;
  }

  /** Records a committed move. */
  advance(): void {
    this.#generation += 1;
  }

  /** Whether the caller runs inside one of this manager's transitions. */
  get inTransition(): boolean {
    return context.getStore()?.writers.has(this) === true;
  }

  /** Runs `fn` as the only cwd writer of this manager, after the transitions queued before and the leases granted before. */
  async exclusive<T>(fn: () => Promise<T>): Promise<T> {
    if (this.inTransition) return fn();
    if (this.#pendingWriters === 0) {
      this.#writersIdle = new Promise((resolve) => (this.#releaseWritersIdle = resolve));
    }
    this.#pendingWriters += 1;
    const previous = this.#tail;
    let settle!: () => void;
    this.#tail = new Promise((resolve) => (settle = resolve));
    try {
      await previous;
      while (this.#readers > 0) await new Promise<void>((resolve) => (this.#drained = resolve));
      return await context.run(within("writers", this), fn);
    } finally {
      this.#pendingWriters -= 1;
      if (this.#pendingWriters === 0) this.#releaseWritersIdle?.();
      settle();
    }
  }

  /** Runs `fn` under a shared lease: no transition of this manager commits while it runs. */
  async withReadLease<T>(fn: () => Promise<T>): Promise<T> {
    const store = context.getStore();
    if (store?.readers.has(this) === true || store?.writers.has(this) === true) return fn();
    while (this.#pendingWriters > 0) await this.#writersIdle;
    this.#readers += 1;
    try {
      return await context.run(within("readers", this), fn);
    } finally {
      this.#readers -= 1;
      if (this.#readers === 0) {
        const wake = this.#drained;
        this.#drained = undefined;
        wake?.();
      }
    }
  }

  /** Settles once every transition queued so far has; never rejects. */
  async join(): Promise<void> {
    let tail: Promise<void>;
    do {
      tail = this.#tail;
      await tail;
    } while (tail !== this.#tail);
  }
}

/** @throws GjcFaceError `cwd_identity_changed` unless `dir` is a directory (no link) and, where pinned, the same one as `options` names */
export async function checkMoveTarget(
  dir: string,
  options: { expectedIdentity?: DirectoryIdentity; targetHandle?: { stat(opts: { bigint: true }): Promise<fs.BigIntStats> } },
): Promise<void> {
  const { expectedIdentity, targetHandle } = options;
  if (expectedIdentity === undefined && targetHandle === undefined) return;
  const byPath = await fs.promises.lstat(dir, { bigint: true }).catch(() => undefined);
  const held = targetHandle === undefined ? undefined : await targetHandle.stat({ bigint: true });
  const expected = expectedIdentity ?? held!;
  const same = (stat: fs.BigIntStats | undefined) => stat !== undefined && stat.dev === expected.dev && stat.ino === expected.ino;
  if (byPath === undefined || !byPath.isDirectory() || !same(byPath) || (held !== undefined && !same(held))) {
    throw new GjcFaceError("cwd_identity_changed", `Refusing to move: the identity of ${dir} changed`);
  }
}
