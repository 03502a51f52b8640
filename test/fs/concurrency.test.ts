// Real processes against one store: concurrent no-replace publishers, kernel-released locks,
// and close-on-exec of every descriptor the addon holds.
import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";

import { SecureDir } from "../../src/index.js";
import { asyncCodeOf, codeOf } from "../helpers/errors.js";
import { BINDING_LOADER } from "../helpers/processes.js";
import { makeTempDir } from "../helpers/temp.js";

let tmp: ReturnType<typeof makeTempDir>;
let root: SecureDir;
beforeEach(() => {
  tmp = makeTempDir();
  root = SecureDir.openRoot(path.join(tmp.path, "store"), { create: true });
});
afterEach(() => {
  root.close();
  tmp.remove();
});

/** Starts a node child with the addon loaded as `b` and the store path as `store`. */
function startChild(body: string) {
  const script = `const b = require(${JSON.stringify(BINDING_LOADER)});
const store = ${JSON.stringify(root.path)};
${body}`;
  return spawn(process.execPath, ["-e", script], { stdio: ["ignore", "pipe", "pipe"] });
}

function collect(child: ReturnType<typeof spawn>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  let stdout = "";
  let stderr = "";
  child.stdout?.on("data", (d: Buffer) => (stdout += d.toString()));
  child.stderr?.on("data", (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve) => child.on("exit", (code) => resolve({ code, stdout, stderr })));
}

function firstLine(child: ReturnType<typeof spawn>): Promise<string> {
  return new Promise((resolve, reject) => {
    let buf = "";
    child.stdout?.on("data", (d: Buffer) => {
      buf += d.toString();
      if (buf.includes("\n")) resolve(buf.split("\n")[0] ?? "");
    });
    child.on("exit", (code) => reject(new Error(`child exited (${code}) before reporting`)));
  });
}

describe("no-replace publication under contention", () => {
  it("two concurrent publishers: exactly one wins each name and the winner is never replaced", async () => {
    const rounds = 300;
    const publisher = (id: string) =>
      startChild(`
        const root = b.openRoot(store);
        const wins = [];
        for (let i = 0; i < ${rounds}; i++) {
          const r = b.writeFileAtomic(root, "round-" + i, ${JSON.stringify(id)}, { noReplace: true });
          if (r === undefined) wins.push(i);
          else if (r.code !== "already_exists") throw new Error(r.code);
        }
        process.stdout.write(JSON.stringify(wins));`);
    const [a, b] = await Promise.all([collect(publisher("A")), collect(publisher("B"))]);
    expect(a.code, a.stderr).toBe(0);
    expect(b.code, b.stderr).toBe(0);
    const winsA = JSON.parse(a.stdout) as number[];
    const winsB = JSON.parse(b.stdout) as number[];
    expect(winsA.length + winsB.length).toBe(rounds);
    expect(new Set([...winsA, ...winsB]).size).toBe(rounds);
    for (const i of winsA) expect(fs.readFileSync(path.join(root.path, `round-${i}`), "utf8")).toBe("A");
    for (const i of winsB) expect(fs.readFileSync(path.join(root.path, `round-${i}`), "utf8")).toBe("B");
    expect(root.list().length).toBe(rounds);
  });
});

describe("locks released by the kernel", () => {
  it("conflicts between holders in one process, and release frees it", async () => {
    const first = root.tryLock("store.lock", { purpose: "test" });
    expect(first.held).toBe(true);
    expect(codeOf(() => root.tryLock("store.lock"))).toBe("lock_busy");
    const record = JSON.parse(fs.readFileSync(path.join(root.path, "store.lock"), "utf8"));
    expect(record).toEqual({ pid: process.pid, createdAt: first.record.createdAt, purpose: "test" });
    setTimeout(() => first.release(), 60);
    const second = await root.lock("store.lock", { waitMs: 5_000 });
    expect(first.held).toBe(false);
    expect(second.held).toBe(true);
    second.release();
    expect(fs.readFileSync(path.join(root.path, "store.lock"), "utf8")).toBe("");
  });

  it("a live holder keeps the lock; SIGKILL of the holder frees it at once", async () => {
    const holder = startChild(`
      const root = b.openRoot(store);
      const lock = b.tryLock(root, "store.lock", JSON.stringify({ pid: process.pid, createdAt: new Date().toISOString(), purpose: "holder" }));
      process.stdout.write((lock.failed ? "failed " + lock.code : "locked") + "\\n");
      setInterval(() => {}, 1000);`);
    const exited = new Promise((resolve) => holder.on("exit", resolve));
    expect(await firstLine(holder)).toBe("locked");
    expect(codeOf(() => root.tryLock("store.lock"))).toBe("lock_busy");
    const started = Date.now();
    expect(await asyncCodeOf(() => root.lock("store.lock", { waitMs: 150 }))).toBe("lock_busy");
    expect(Date.now() - started).toBeGreaterThanOrEqual(140);
    const record = JSON.parse(fs.readFileSync(path.join(root.path, "store.lock"), "utf8"));
    expect(record).toMatchObject({ pid: holder.pid, purpose: "holder" });
    holder.kill("SIGKILL");
    await exited;
    const lock = root.tryLock("store.lock");
    expect(lock.held).toBe(true);
    lock.release();
  });
});

describe("lockSync (the thread sleeps between tries)", () => {
  it("gives lock_busy when another process holds the lock past the wait, and takes it once that process is gone", async () => {
    const holder = startChild(`
      const root = b.openRoot(store);
      const lock = b.tryLock(root, "store.lock", JSON.stringify({ pid: process.pid, createdAt: new Date().toISOString(), purpose: "holder" }));
      process.stdout.write((lock.failed ? "failed " + lock.code : "locked") + "\\n");
      setTimeout(() => process.exit(0), 400);`);
    expect(await firstLine(holder)).toBe("locked");
    expect(codeOf(() => root.lockSync("store.lock", { waitMs: 50 }))).toBe("lock_busy");
    // Blocks this thread until the holder has exited (the kernel frees its lock).
    const lock = root.lockSync("store.lock", { waitMs: 30_000, purpose: "sync" });
    expect(lock.held).toBe(true);
    expect(holder.exitCode ?? (await new Promise((resolve) => holder.on("exit", resolve)))).toBe(0);
    lock.release();
  });
});

describe("close-on-exec", () => {
  function storeFds(pid: number | "self"): Array<{ fd: string; target: string }> {
    const dir = `/proc/${pid}/fd`;
    const found: Array<{ fd: string; target: string }> = [];
    for (const fd of fs.readdirSync(dir)) {
      let target: string;
      try {
        target = fs.readlinkSync(path.join(dir, fd));
      } catch {
        continue;
      }
      if (target.startsWith(root.path)) found.push({ fd, target });
    }
    return found;
  }

  it("every addon descriptor carries O_CLOEXEC, and a spawned child holds none of them", () => {
    const sub = root.openDir("sub", { create: true });
    const file = sub.openFile("f", { append: true, create: "exclusive" });
    const lock = root.tryLock("lock");
    const held = storeFds("self");
    expect(held.length).toBeGreaterThanOrEqual(4);
    for (const { fd } of held) {
      const flags = /flags:\s+([0-7]+)/.exec(fs.readFileSync(`/proc/self/fdinfo/${fd}`, "utf8"))?.[1];
      expect(flags, `fd ${fd}`).toBeDefined();
      expect(Number.parseInt(flags ?? "0", 8) & 0o2000000, `fd ${fd} lacks O_CLOEXEC`).not.toBe(0);
    }
    const child = spawnSync("sh", ["-c", 'for f in /proc/$$/fd/*; do readlink "$f"; done; exit 0'], { encoding: "utf8" });
    expect(child.status).toBe(0);
    const childTargets = child.stdout.split("\n").filter(Boolean);
    expect(childTargets.length).toBeGreaterThan(0);
    expect(childTargets.filter((t) => t.startsWith(root.path))).toEqual([]);
    lock.release();
    file.close();
    sub.close();
    expect(storeFds("self").length).toBe(1);
  });
});
