/**
 * The ancestor rule of a trusted root, for messages and reports: the addon enforces it by
 * descriptor when a root is opened (`insecure_ancestor`); this names the directories, by
 * path, once the addon has refused (or for an audit). Never used to decide access.
 */
import fs from "node:fs";
import path from "node:path";

const STICKY = 0o1000;
const GROUP_OR_OTHER_WRITE = 0o022;

/**
 * Why the directory `st` lets another user replace what it holds, or `undefined` when it
 * does not: the rule of the addon's ancestor check (owned by root or `euid`, not writable by
 * group or others unless sticky), in words for a report.
 */
function ancestorProblem(st: fs.Stats, euid: number): string | undefined {
  if (st.uid !== 0 && st.uid !== euid) return `owned by uid ${st.uid}, neither root nor the effective user`;
  if ((st.mode & GROUP_OR_OTHER_WRITE) === 0 || (st.mode & STICKY) !== 0) return undefined;
  return `writable by ${(st.mode & 0o002) !== 0 ? "everyone" : "its group"} without the sticky bit`;
}

/**
 * Every ancestor of `canonicalRoot` (a canonical path) that fails {@link ancestorProblem},
 * nearest first, with the reason.
 */
export function insecureAncestors(canonicalRoot: string): { path: string; problem: string; mode: number }[] {
  const euid = process.geteuid?.() ?? 0;
  const found: { path: string; problem: string; mode: number }[] = [];
  let current = path.dirname(canonicalRoot);
  for (;;) {
    let st: fs.Stats | undefined;
    try {
      st = fs.lstatSync(current);
    } catch {
      st = undefined; // gone or unreadable: nothing to judge here
    }
    const problem = st?.isDirectory() === true ? ancestorProblem(st, euid) : undefined;
    if (st !== undefined && problem !== undefined) found.push({ path: current, problem, mode: st.mode & 0o7777 });
    const parent = path.dirname(current);
    if (parent === current) return found;
    current = parent;
  }
}


/**
 * The nearest ancestor of `rootPath` that fails the rule (its existing ancestors
 * canonicalised, as the addon does), or `undefined` when none does (any more).
 */
export function nearestInsecureAncestor(rootPath: string): string | undefined {
  let current = path.dirname(path.resolve(rootPath));
  for (;;) {
    try {
      // The root itself is not an ancestor; `current` is, and so is everything above it.
      return insecureAncestors(path.join(fs.realpathSync.native(current), "x"))[0]?.path;
    } catch {
      const parent = path.dirname(current);
      if (parent === current) return undefined;
      current = parent;
    }
  }
}
