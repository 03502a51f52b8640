/**
 * Temporary directories for tests that touch the real filesystem.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

/**
 * A fresh owner-only (0700) directory under the system temp dir. `remove()` deletes it
 * with everything inside, making entries writable first so read-only modes do not stop it.
 */
export function makeTempDir(prefix = "gjc-test-"): { path: string; remove(): void } {
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), prefix)));
  fs.chmodSync(dir, 0o700);
  return {
    path: dir,
    remove() {
      makeRemovable(dir);
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

function makeRemovable(target: string): void {
  let st: fs.Stats;
  try {
    st = fs.lstatSync(target);
  } catch {
    return;
  }
  if (!st.isDirectory()) return;
  try {
    fs.chmodSync(target, 0o700);
  } catch {
    // Not ours (a foreign-owner test as root can still remove it); rmSync decides.
  }
  for (const entry of fs.readdirSync(target)) makeRemovable(path.join(target, entry));
}

/** Runs `fn` with the process umask set to `mask`, restoring the previous one after. */
export function withUmask<T>(mask: number, fn: () => T): T {
  const previous = process.umask(mask);
  try {
    return fn();
  } finally {
    process.umask(previous);
  }
}
