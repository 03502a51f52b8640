/**
 * The records the crash-test child writes, shared with the parent that checks them.
 */

/** The log line for record `index` (its length varies so kills land at varied offsets). */
export function logRecord(index: number): string {
  return JSON.stringify({ i: index, pad: "x".repeat(100 + (index % 97)) });
}

/** Lines per snapshot version: large enough that a kill often lands mid-rewrite. */
export const SNAPSHOT_LINES = 1500;

/** The content of snapshot `version`, as the chunks the child hands to its writer's rewrite. */
export function snapshotChunks(version: number): string[] {
  return Array.from({ length: SNAPSHOT_LINES }, (_, k) => `{"v":${version},"k":${k}}\n`);
}
