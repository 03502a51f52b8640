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
  return fs.readdirSync("/proc/self/fd").filter((fd) => {
    try {
      const target = fs.readlinkSync(`/proc/self/fd/${fd}`);
      return target === real || target.startsWith(real + path.sep);
    } catch {
      return false; // the descriptor readdir itself used, closed by now
    }
  }).length;
}
