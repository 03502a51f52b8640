// The pinned agent directory: scope creation, the managed target, breadcrumbs and the managed
// listings reach everything below the agent directory from one held descriptor. Planted
// objects (links, dangling links, hard links, FIFOs, sockets, another user's directories) at
// the managed paths they use are refused with a typed code, and nothing outside is read or
// written.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";

import { describe, expect, it } from "vitest";

import { AgentRoot, ScopeError, SecureFsError, readBreadcrumb, resolveManagedScope, writeBreadcrumb } from "../../src/index.js";
import { BINDING_FILE_NAME, managedSessionTarget } from "../../src/scope/index.js";
import { TERMINAL_SESSIONS_DIR } from "../../src/manager/breadcrumbs.js";
import { listAllManaged, listManagedScope } from "../../src/manager/index.js";
import { isRoot, skipBecause } from "../helpers/processes.js";
import { treeState, useSandboxes, type Sandbox } from "./helpers.js";

const sandbox = useSandboxes();
const FOREIGN = 65534;

function sessionText(cwd: string, id: string): string {
  return `${JSON.stringify({ type: "session", version: 3, id, timestamp: "2026-01-01T00:00:00.000Z", cwd })}\n`;
}

/** An outside tree with a marker, to prove nothing was read from or written into it. */
function outsideTree(box: Sandbox): { dir: string; unchanged(): boolean } {
  const dir = path.join(box.root, "outside");
  fs.mkdirSync(dir, { mode: 0o700 });
  fs.writeFileSync(path.join(dir, "marker.jsonl"), sessionText("/outside", "outside-marker"), { mode: 0o600 });
  const before = treeState(dir);
  return { dir, unchanged: () => JSON.stringify(treeState(dir)) === JSON.stringify(before) };
}

function prepared(box: Sandbox) {
  const result = resolveManagedScope({ cwd: box.cwd, agentDir: box.agentDir, mode: "write" });
  if (result.kind !== "resolved") throw new Error(`${result.code}/${result.cause}`);
  return result.scope;
}

function mkfifo(at: string): void {
  execFileSync("mkfifo", ["-m", "600", at]);
}

/** A listening socket moved to `at` (socket paths are limited to ~100 bytes, `at` may be longer). */
async function socketAt(at: string): Promise<net.Server> {
  const short = fs.mkdtempSync(path.join(os.tmpdir(), "s-"));
  const server = net.createServer();
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(path.join(short, "s"), resolve);
  });
  fs.renameSync(path.join(short, "s"), at);
  fs.rmdirSync(short);
  expect(fs.lstatSync(at).isSocket()).toBe(true);
  return server;
}

describe("the agent directory itself", () => {
  it("a symlinked or dangling agent dir is refused by every entry point and the target is untouched", async () => {
    const box = sandbox();
    const outside = outsideTree(box);
    for (const target of [outside.dir, path.join(box.root, "missing")]) {
      fs.rmSync(box.agentDir, { force: true });
      fs.symlinkSync(target, box.agentDir);
      for (const mode of ["read", "write"] as const) {
        expect(resolveManagedScope({ cwd: box.cwd, agentDir: box.agentDir, mode })).toMatchObject({
          code: "sessions_root_unavailable",
          cause: "reparse_point",
        });
      }
      expect(() => managedSessionTarget(box.cwd, box.agentDir)).toThrow(ScopeError);
      await expect(listManagedScope(box.cwd, box.agentDir)).rejects.toMatchObject({ code: "sessions_root_unavailable" });
      expect(await listAllManaged({ agentDir: box.agentDir })).toEqual({
        sessions: [],
        skipped: [{ path: path.join(box.agentDir, "sessions"), code: "symlink_refused", detail: "symlink_refused" }],
      });
      expect(writeBreadcrumb(box.agentDir, "pts-1", "/w", "/w/s.jsonl")).toMatchObject({ ok: false, storageCode: "symlink_refused" });
      expect(await readBreadcrumb(box.agentDir, "pts-1")).toMatchObject({ kind: "none", storageCode: "symlink_refused" });
      expect(() => AgentRoot.open(box.agentDir)).toThrow(SecureFsError);
    }
    expect(outside.unchanged()).toBe(true);
    expect(fs.existsSync(path.join(box.root, "missing"))).toBe(false);
  });

  it("a FIFO or socket where the agent dir should be is not_directory, typed", async () => {
    const box = sandbox();
    mkfifo(box.agentDir);
    expect(resolveManagedScope({ cwd: box.cwd, agentDir: box.agentDir, mode: "write" })).toMatchObject({
      code: "sessions_root_unavailable",
      cause: "not_directory",
    });
    fs.rmSync(box.agentDir);
    const server = await socketAt(box.agentDir);
    try {
      expect(resolveManagedScope({ cwd: box.cwd, agentDir: box.agentDir })).toMatchObject({ code: "sessions_root_unavailable", cause: "not_directory" });
    } finally {
      server.close();
    }
  });

  it("an agent dir owned by another user is refused in read and write mode and never repaired (root only)", async (ctx) => {
    if (!isRoot()) skipBecause(ctx, "chown to another uid needs root");
    const box = sandbox();
    prepared(box);
    fs.chmodSync(box.agentDir, 0o755);
    fs.chownSync(box.agentDir, FOREIGN, FOREIGN);
    const before = treeState(box.agentDir);
    for (const mode of ["read", "write"] as const) {
      expect(resolveManagedScope({ cwd: box.cwd, agentDir: box.agentDir, mode })).toMatchObject({ code: "sessions_root_unavailable", cause: "owner_mismatch" });
    }
    expect((await listAllManaged({ agentDir: box.agentDir })).skipped).toEqual([
      { path: path.join(box.agentDir, "sessions"), code: "unsafe_entry", detail: "owner_mismatch" },
    ]);
    expect(treeState(box.agentDir)).toEqual(before);
  });

  it("an insecure ancestor fails closed with its code as the cause", () => {
    const box = sandbox();
    fs.chmodSync(box.root, 0o777);
    try {
      expect(resolveManagedScope({ cwd: box.cwd, agentDir: box.agentDir, mode: "write" })).toMatchObject({
        code: "sessions_root_unavailable",
        cause: "insecure_ancestor",
      });
      expect(fs.existsSync(box.agentDir)).toBe(false);
    } finally {
      fs.chmodSync(box.root, 0o700);
    }
  });
});

describe("below the agent directory", () => {
  it("an explicit sessionsRoot below the agent dir is walked by descriptor: a link there is refused (issue 17.1)", () => {
    const box = sandbox();
    const outside = outsideTree(box);
    fs.mkdirSync(box.agentDir, { mode: 0o700 });
    fs.symlinkSync(outside.dir, path.join(box.agentDir, "sessions"));
    for (const mode of ["read", "write"] as const) {
      const result = resolveManagedScope({ cwd: box.cwd, agentDir: box.agentDir, sessionsRoot: path.join(box.agentDir, "sessions"), mode });
      expect(result).toMatchObject({ kind: "error", code: "sessions_root_unavailable", cause: "reparse_point" });
    }
    // A deeper root below the link: still from the agent's descriptor, still refused.
    const deeper = resolveManagedScope({ cwd: box.cwd, agentDir: box.agentDir, sessionsRoot: path.join(box.agentDir, "sessions", "sub"), mode: "write" });
    expect(deeper).toMatchObject({ kind: "error", code: "sessions_root_unavailable", cause: "reparse_point" });
    expect(outside.unchanged()).toBe(true);
    // The same explicit root without the link is used like the default one.
    fs.unlinkSync(path.join(box.agentDir, "sessions"));
    const ok = resolveManagedScope({ cwd: box.cwd, agentDir: box.agentDir, sessionsRoot: path.join(box.agentDir, "sessions"), mode: "write" });
    expect(ok).toMatchObject({ kind: "resolved", scope: { sessionsRoot: path.join(box.agentDir, "sessions") } });
  });

  it("a 0777 agent dir where another user made sessions/, blobs/ and terminal-sessions/: repaired, theirs refused, not adopted (root only)", async (ctx) => {
    if (!isRoot()) skipBecause(ctx, "chown to another uid needs root");
    const box = sandbox();
    fs.mkdirSync(box.agentDir, { mode: 0o777 });
    fs.chmodSync(box.agentDir, 0o777);
    for (const name of ["sessions", "blobs", TERMINAL_SESSIONS_DIR]) {
      fs.mkdirSync(path.join(box.agentDir, name), { mode: 0o777 });
      fs.chmodSync(path.join(box.agentDir, name), 0o777);
      fs.chownSync(path.join(box.agentDir, name), FOREIGN, FOREIGN);
    }
    expect(resolveManagedScope({ cwd: box.cwd, agentDir: box.agentDir, mode: "write" })).toMatchObject({
      code: "sessions_root_unavailable",
      cause: "owner_mismatch",
    });
    expect(fs.statSync(box.agentDir).mode & 0o7777).toBe(0o700);
    expect(writeBreadcrumb(box.agentDir, "pts-1", "/w", "/w/s.jsonl")).toEqual({ ok: false, code: "write_failed", storageCode: "unsafe_entry" });
    const root = AgentRoot.open(box.agentDir, { write: true });
    try {
      for (const name of ["blobs", TERMINAL_SESSIONS_DIR]) expect(() => root.openDir(name)).toThrow(expect.objectContaining({ code: "owner_mismatch" }));
    } finally {
      root.close();
    }
    for (const name of ["sessions", "blobs", TERMINAL_SESSIONS_DIR]) {
      expect(fs.readdirSync(path.join(box.agentDir, name))).toEqual([]);
      expect(fs.statSync(path.join(box.agentDir, name)).uid).toBe(FOREIGN);
    }
  });

  it("the binding file as a link, a dangling link, a hard link, a FIFO or a socket is binding_invalid", async () => {
    const box = sandbox();
    const scope = prepared(box);
    const outside = outsideTree(box);
    const binding = path.join(scope.directoryPath, BINDING_FILE_NAME);
    const real = fs.readFileSync(binding);
    const plants: [string, () => Promise<(() => void) | void> | void][] = [
      ["link", () => fs.symlinkSync(path.join(outside.dir, "marker.jsonl"), binding)],
      ["dangling", () => fs.symlinkSync(path.join(outside.dir, "gone"), binding)],
      [
        "hardlink",
        () => {
          fs.writeFileSync(path.join(box.root, "twin"), real, { mode: 0o600 });
          fs.linkSync(path.join(box.root, "twin"), binding);
        },
      ],
      ["fifo", () => mkfifo(binding)],
      [
        "socket",
        async () => {
          const server = await socketAt(binding);
          return () => server.close();
        },
      ],
    ];
    for (const [label, plant] of plants) {
      fs.rmSync(binding, { force: true });
      const cleanup = await plant();
      for (const mode of ["read", "write"] as const) {
        expect(resolveManagedScope({ cwd: box.cwd, agentDir: box.agentDir, mode }), `${label} ${mode}`).toMatchObject({
          kind: "error",
          code: "binding_invalid",
        });
      }
      cleanup?.();
    }
    expect(outside.unchanged()).toBe(true);
  });

  it("the managed target writes into the scope directory it checked, even after a swap", () => {
    const box = sandbox();
    const outside = outsideTree(box);
    const target = managedSessionTarget(box.cwd, box.agentDir);
    try {
      // The scope directory is moved away and a link to the outside put in its place.
      const moved = path.join(box.root, "moved-scope");
      fs.renameSync(target.sessionDir, moved);
      fs.symlinkSync(outside.dir, target.sessionDir);
      target.storage.writeTextSync(path.join(target.sessionDir, "probe.jsonl"), "x\n");
      expect(fs.existsSync(path.join(moved, "probe.jsonl"))).toBe(true);
      expect(outside.unchanged()).toBe(true);
    } finally {
      target.storage.close();
      target.agentRoot.close();
    }
  });

  it("breadcrumbs: a loose, hard-linked or FIFO breadcrumb is refused, typed; a link is never followed", async () => {
    const box = sandbox();
    const outside = outsideTree(box);
    expect(writeBreadcrumb(box.agentDir, "pts-1", "/w", "/w/s.jsonl")).toMatchObject({ ok: true });
    const crumb = path.join(box.agentDir, TERMINAL_SESSIONS_DIR, "pts-1");
    fs.chmodSync(crumb, 0o644);
    expect(await readBreadcrumb(box.agentDir, "pts-1")).toEqual({ kind: "none", reason: "unreadable", storageCode: "unsafe_entry" });
    fs.chmodSync(crumb, 0o600);
    fs.linkSync(crumb, path.join(box.root, "twin"));
    expect(await readBreadcrumb(box.agentDir, "pts-1")).toEqual({ kind: "none", reason: "unreadable", storageCode: "unsafe_entry" });
    fs.rmSync(crumb);
    mkfifo(crumb);
    expect(await readBreadcrumb(box.agentDir, "pts-1")).toMatchObject({ kind: "none", reason: "unreadable", storageCode: "not_regular_file" });
    fs.rmSync(crumb);
    fs.rmSync(path.join(box.agentDir, TERMINAL_SESSIONS_DIR), { recursive: true });
    fs.symlinkSync(outside.dir, path.join(box.agentDir, TERMINAL_SESSIONS_DIR));
    expect(writeBreadcrumb(box.agentDir, "marker.jsonl", "/w", "/w/s.jsonl")).toMatchObject({ ok: false, storageCode: "symlink_refused" });
    expect(await readBreadcrumb(box.agentDir, "marker.jsonl")).toMatchObject({ kind: "none", storageCode: "symlink_refused" });
    expect(outside.unchanged()).toBe(true);
  });
});

describe("managed listings", () => {
  it("list the scope and every scope through held directories; planted objects are skipped with codes", async () => {
    const box = sandbox();
    const scope = prepared(box);
    const outside = outsideTree(box);
    fs.writeFileSync(path.join(scope.directoryPath, "a.jsonl"), sessionText(box.cwd, "inside-a"), { mode: 0o600 });
    fs.writeFileSync(path.join(box.root, "twin.jsonl"), sessionText(box.cwd, "twin"), { mode: 0o600 });
    fs.linkSync(path.join(box.root, "twin.jsonl"), path.join(scope.directoryPath, "hard.jsonl"));
    fs.symlinkSync(path.join(outside.dir, "marker.jsonl"), path.join(scope.directoryPath, "link.jsonl"));
    mkfifo(path.join(scope.directoryPath, "fifo.jsonl"));
    // Another scope-like directory that is a link to the outside tree.
    fs.symlinkSync(outside.dir, path.join(scope.sessionsRoot, "v2-outside"));
    const one = await listManagedScope(box.cwd, box.agentDir, { persistentIndex: false });
    const all = await listAllManaged({ agentDir: box.agentDir, persistentIndex: false });
    for (const listing of [one, all]) {
      expect(listing.sessions.map((s) => s.id)).toEqual(["inside-a"]);
      const skipped = new Map(listing.skipped.map((s) => [path.basename(s.path), s.code]));
      expect(skipped.get("hard.jsonl")).toBe("unsafe_entry");
      expect(skipped.get("link.jsonl")).toBe("symlink_refused");
      expect(skipped.get("fifo.jsonl")).toBe("not_regular_file");
    }
    expect(all.skipped.find((s) => s.path.endsWith("v2-outside"))?.code).toBe("symlink_refused");
    expect(outside.unchanged()).toBe(true);
  });

  it("a foreign-owned sessions root or scope directory is skipped, never read through (root only)", async (ctx) => {
    if (!isRoot()) skipBecause(ctx, "chown to another uid needs root");
    const box = sandbox();
    const scope = prepared(box);
    fs.writeFileSync(path.join(scope.directoryPath, "a.jsonl"), sessionText(box.cwd, "a"), { mode: 0o600 });
    fs.chownSync(scope.directoryPath, FOREIGN, FOREIGN);
    expect((await listAllManaged({ agentDir: box.agentDir })).sessions).toEqual([]);
    await expect(listManagedScope(box.cwd, box.agentDir)).rejects.toMatchObject({ code: "binding_invalid" });
    fs.chownSync(scope.directoryPath, 0, 0);
    fs.chownSync(scope.sessionsRoot, FOREIGN, FOREIGN);
    expect(await listAllManaged({ agentDir: box.agentDir })).toEqual({
      sessions: [],
      skipped: [{ path: scope.sessionsRoot, code: "unsafe_entry", detail: "owner_mismatch" }],
    });
  });
});
