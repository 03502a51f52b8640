/**
 * Removal of what killed atomic writes left: the fs layer names a write's temporary `.gjc-tmp-`
 * + FNV-1a of the name + 8 random hex (native `staging_name`), so a writer-lock holder knows them.
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

/** Removes the leftover temporaries of `name` (regular files only: the audit reports the rest); the caller holds its writer lock. Best effort. */
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
