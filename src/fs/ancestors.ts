/**
 * The ancestor rule of a trusted root, for messages and reports: the addon enforces it by
 * descriptor (`insecure_ancestor`); this names the directories by path. Never decides access.
 */
import fs from "node:fs";
import path from "node:path";

const STICKY = 0o1000;
const GROUP_OR_OTHER_WRITE = 0o022;

/** Why directory `st` lets another user replace what it holds (the addon's rule, in words), or `undefined`. */
function ancestorProblem(st: fs.Stats, euid: number): string | undefined {
  if (st.uid !== 0 && st.uid !== euid) return `owned by uid ${st.uid}, neither root nor the effective user`;
  if ((st.mode & GROUP_OR_OTHER_WRITE) === 0 || (st.mode & STICKY) !== 0) return undefined;
  return `writable by ${(st.mode & 0o002) !== 0 ? "everyone" : "its group"} without the sticky bit`;
}

/** Every ancestor of the canonical path `canonicalRoot` that fails the rule, nearest first, with the reason. */
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

/** The nearest ancestor of `rootPath` (canonicalised as the addon does) that fails the rule, if any still does. */
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
