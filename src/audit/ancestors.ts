/**
 * What lies at and above the agent directory, outside the tree the walk holds by
 * descriptor: the directory's own entry (explained when the owner-only open refused it) and
 * its ancestors, any of which another user could use to swap the path if it is writable by
 * group or others without the sticky bit. These paths are above the trusted root, so they
 * are examined with `lstat` on the path, the way the OS resolves it for every later open.
 */
import fs from "node:fs";
import path from "node:path";

import type { FindingCollector } from "./collector.js";

const STICKY = 0o1000;
const GROUP_OR_OTHER_WRITE = 0o022;

/**
 * Reports every ancestor of `agentDir` (its canonical path) that is writable by group or
 * others and lacks the sticky bit, as an `insecure_ancestor` warning keyed by its absolute path.
 */
export function checkAncestors(canonicalAgentDir: string, collector: FindingCollector): void {
  let current = path.dirname(canonicalAgentDir);
  for (;;) {
    let st: fs.Stats | undefined;
    try {
      st = fs.lstatSync(current);
    } catch {
      st = undefined; // gone or unreadable: nothing to judge, the walk below already held the dir
    }
    if (st !== undefined && st.isDirectory() && (st.mode & GROUP_OR_OTHER_WRITE) !== 0 && (st.mode & STICKY) === 0) {
      const who = (st.mode & 0o002) !== 0 ? "everyone" : "its group";
      collector.add(current, "directory", "insecure_ancestor", `writable by ${who} without the sticky bit`, {
        detail: `0${(st.mode & 0o7777).toString(8)}`,
      });
    }
    const parent = path.dirname(current);
    if (parent === current) return;
    current = parent;
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
