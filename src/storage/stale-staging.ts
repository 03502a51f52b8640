/**
 * The temporaries an atomic write leaves when it is killed mid-way, and their removal by the
 * next writer of the same file. The fs layer names the temporary of a write to `target`
 * `.gjc-tmp-<8 hex: FNV-1a of the target name><8 random hex>` (native `staging_name`), so a
 * writer that holds a session's writer lock knows which temporaries are that session's: no
 * other process may rewrite the file while the lock is held, so each one is a leftover.
 */
import type { SecureDir } from "../fs/index.js";

const STAGING_PREFIX = ".gjc-tmp-";
const RANDOM_HEX = 8;

/** `.gjc-tmp-` and the 8-hex FNV-1a digest of `name` (UTF-8 bytes), as the native layer builds it. */
export function stagingPrefixOf(name: string): string {
  let digest = 0x811c9dc5;
  for (const byte of Buffer.from(name, "utf8")) {
    digest ^= byte;
    digest = Math.imul(digest, 0x01000193) >>> 0;
  }
  return `${STAGING_PREFIX}${digest.toString(16).padStart(8, "0")}`;
}

/**
 * Removes the temporaries of atomic writes of `name` left in `dir`; the caller holds `name`'s
 * writer lock. Each is removed by name from the held directory descriptor, without following
 * anything, and only when a no-follow stat on that descriptor shows a regular file (a link or
 * directory with such a name is left for the audit to report). Best effort: a temporary that
 * cannot be removed stays, as it would have without this.
 */
export function removeOwnStaging(dir: SecureDir, name: string): void {
  const prefix = stagingPrefixOf(name);
  for (const entry of dir.list()) {
    if (entry.name.length !== prefix.length + RANDOM_HEX || !entry.name.startsWith(prefix)) continue;
    if (!/^[0-9a-f]+$/.test(entry.name.slice(prefix.length))) continue;
    try {
      if (dir.stat(entry.name).type !== "file") continue;
      dir.unlink(entry.name);
    } catch {
      // Gone meanwhile, or refused: nothing of the session depends on it.
    }
  }
}
