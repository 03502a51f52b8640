/**
 * Removal of the temporaries a killed atomic write left. The fs layer names the temporary of a
 * write to `target` `.gjc-tmp-<8 hex FNV-1a of the name><8 random hex>` (native
 * `staging_name`), so the holder of a file's writer lock knows each such name is a leftover.
 */
import type { SecureDir } from "../fs/index.js";

const RANDOM_HEX = 8;

/** `.gjc-tmp-` and the 8-hex FNV-1a digest of `name` (UTF-8 bytes), as the native layer builds it. */
export function stagingPrefixOf(name: string): string {
  let digest = 0x811c9dc5;
  for (const byte of Buffer.from(name, "utf8")) {
    digest ^= byte;
    digest = Math.imul(digest, 0x01000193) >>> 0;
  }
  return `.gjc-tmp-${digest.toString(16).padStart(8, "0")}`;
}

/**
 * Removes the leftover temporaries of `name` from `dir`; the caller holds `name`'s writer
 * lock. Only what a no-follow stat on the held descriptor shows as a regular file is removed
 * (a link or directory is left for the audit to report). Best effort.
 */
export function removeOwnStaging(dir: SecureDir, name: string): void {
  const prefix = stagingPrefixOf(name);
  for (const entry of dir.list()) {
    if (entry.name.length !== prefix.length + RANDOM_HEX || !entry.name.startsWith(prefix)) continue;
    if (!/^[0-9a-f]+$/.test(entry.name.slice(prefix.length))) continue;
    try {
      if (dir.stat(entry.name).type === "file") dir.unlink(entry.name);
    } catch {
      // Gone meanwhile, or refused: nothing of the session depends on it.
    }
  }
}
