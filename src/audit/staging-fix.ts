/**
 * The `--fix` repair of a stale temporary (`stale_staging_file`): a file an atomic write or a
 * migration was killed before publishing. It holds no data the store refers to (a session or
 * blob is only ever read under its published name), so removing it loses nothing.
 */
import type { SecureDir } from "../fs/index.js";
import type { AuditRepair } from "./schema.js";

/**
 * Removes the stale temporary `name` of the held directory `dir` (reported under `rel`): by
 * name on the descriptor, after a no-follow stat on that descriptor shows a regular file, so
 * a link or directory swapped in under that name is refused, never followed.
 */
export function removeStaleTemporary(dir: SecureDir, name: string, rel: string): AuditRepair {
  try {
    if (dir.stat(name).type !== "file") return { path: rel, codes: ["stale_staging_file"], outcome: "refused", reason: "not_regular_file" };
    dir.unlink(name);
    return { path: rel, codes: ["stale_staging_file"], outcome: "repaired" };
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    return { path: rel, codes: ["stale_staging_file"], outcome: "refused", reason: typeof code === "string" ? code : "io_error" };
  }
}
