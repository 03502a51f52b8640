/**
 * What lies at and above the agent directory, outside the tree the walk holds by
 * descriptor: the directory's own entry (explained when the owner-only open refused it) and
 * its ancestors, any of which another user could use to swap the path if they own it, or if
 * it is writable by group or others without the sticky bit. Managed opening refuses such a
 * chain (`insecure_ancestor`, checked race-free by descriptor in the addon); the audit names
 * every offending directory. These paths are above the trusted root, so they are examined
 * with `lstat` on the path, for the report only.
 */
import fs from "node:fs";

import { insecureAncestors } from "../fs/index.js";
import type { FindingCollector } from "./collector.js";

/**
 * Reports every ancestor {@link insecureAncestors} finds as an `insecure_ancestor` error keyed
 * by its absolute path. Windows has no such check (the addon trusts the ancestors there).
 */
export function checkAncestors(canonicalAgentDir: string, collector: FindingCollector): void {
  if (process.platform === "win32") return;
  for (const found of insecureAncestors(canonicalAgentDir)) {
    collector.add(found.path, "directory", "insecure_ancestor", found.problem, { detail: `0${found.mode.toString(8)}` });
  }
}

/** `lstat` of the agent directory's own entry, or `undefined` when it does not exist. */
export function lstatRoot(agentDir: string): fs.Stats | undefined {
  try {
    return fs.lstatSync(agentDir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
}
