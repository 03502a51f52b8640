/**
 * Descriptors this process holds on a directory or anything below it, read from
 * /proc/self/fd. Counting only those keeps a test deaf to the descriptors the test runner
 * itself opens and closes meanwhile.
 */
import fs from "node:fs";
import path from "node:path";

/** How many descriptors of this process are open on `dir` or below it. */
export function descriptorsUnder(dir: string): number {
  const real = fs.realpathSync(dir);
  return descriptorTargets().filter((target) => target === real || target.startsWith(real + path.sep)).length;
}

/**
 * How many descriptors of this process are open on `dir` itself (not on what is below it):
 * what a batch running on the thread pool keeps while it holds the directory.
 */
export function descriptorsOn(dir: string): number {
  const real = fs.realpathSync(dir);
  return descriptorTargets().filter((target) => target === real).length;
}

function descriptorTargets(): string[] {
  return fs.readdirSync("/proc/self/fd").flatMap((fd) => {
    try {
      return [fs.readlinkSync(`/proc/self/fd/${fd}`)];
    } catch {
      return []; // the descriptor readdir itself used, closed by now
    }
  });
}
