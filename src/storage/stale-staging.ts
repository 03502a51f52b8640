/**
 * Removal of what killed atomic writes left: the fs layer names a write's temporary `.gjc-tmp-`
 * + FNV-1a of the name + 8 random hex (native `staging_name`), so a writer-lock holder knows them.
 */
import type { SecureDir } from "../fs/index.js";
import { lockWriter } from "./writer-lock.js";

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
  for (const entry of dir.list(prefix)) {
    if (entry.name.length !== prefix.length + RANDOM_HEX || !entry.name.startsWith(prefix)) continue;
    if (!/^[0-9a-f]+$/.test(entry.name.slice(prefix.length))) continue;
    try {
      if (dir.stat(entry.name).type === "file") dir.unlink(entry.name);
    } catch {
      // Gone meanwhile, or refused: nothing of the session depends on it.
    }
  }
}

/** The session file in `dir` (`*.jsonl`) whose rewrite names its temporaries as `name` is named, or `undefined`. */
export function stagingOwner(dir: SecureDir, name: string): string | undefined {
  if (!name.startsWith(".gjc-tmp-") || !/^[0-9a-f]{16}$/.test(name.slice(".gjc-tmp-".length))) return undefined;
  return dir
    .list()
    .map((entry) => entry.name)
    .find((candidate) => candidate.endsWith(".jsonl") && name.startsWith(stagingPrefixOf(candidate)));
}

/**
 * Removes `temporary`, a leftover of a rewrite of `owner`, when no writer holds `owner`: the writer lock taken
 * (never waited for) proves no rewrite is under way, whatever the temporary's age. True when it was removed.
 */
export function removeIdleStaging(dir: SecureDir, owner: string, temporary: string): boolean {
  let lock;
  try {
    lock = lockWriter(dir, owner);
  } catch {
    return false; // a live writer (or no lock to be had): the temporary may be in use
  }
  try {
    if (dir.stat(temporary).type !== "file") return false;
    dir.unlink(temporary);
    return true;
  } catch {
    return false; // gone meanwhile, or refused: left to the report
  } finally {
    lock.release();
  }
}
