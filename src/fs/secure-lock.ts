/** SecureLock: a kernel-released lock on an owner-only lock file. */
import { native, type NativeHandle } from "../native/index.js";

/** The diagnostic record written into a lock file while it is held. */
export interface LockRecord {
  readonly pid: number;
  readonly createdAt: string;
  readonly purpose: string;
}

/** A held lock; the kernel releases it when the process dies, so a crashed holder leaves none stale. */
export class SecureLock {
  readonly #handle: NativeHandle;
  /** The lock file's name in its directory. */
  readonly name: string;
  /** What this holder wrote into the lock file. */
  readonly record: LockRecord;

  /** @internal Use `SecureDir.lock` / `SecureDir.tryLock`. */
  constructor(handle: NativeHandle, name: string, record: LockRecord) {
    this.#handle = handle;
    this.name = name;
    this.record = record;
  }

  /** True while the lock is held by this object. */
  get held(): boolean {
    return this.#handle.isOpen();
  }

  /** Empties the record and releases the lock. Idempotent. */
  release(): void {
    native.close(this.#handle);
  }
}
