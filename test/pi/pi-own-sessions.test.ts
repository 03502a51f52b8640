/**
 * `gjc-session-store/pi` on a pi user's own agent directory: pi's `PI_CODING_AGENT_DIR` (else `~/.pi/agent`), the
 * sessions pi wrote itself in `sessions/--<cwd>--/` (folders 0755, files 0644) found by `continueRecent`, `list`,
 * `listAll` and `open`, and copied into the managed scope (copy-retain) when one is written to: the source stays
 * byte-identical with its modes, each session is listed once, and a directory made owner-only is named in a warning.
 */
import fs from "node:fs";
import path from "node:path";

import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";

import { SessionManager, getDefaultSessionDir } from "../../src/pi/index.js";
import { piAgentDir } from "../../src/pi/files.js";
import { makeTempDir } from "../helpers/temp.js";
import { bundleChild, startChild, type BundledChild } from "../storage/child-bundle.js";
import { treeState } from "../scope/helpers.js";
import { assistant, recordingLogger, user } from "../manager/helpers.js";

const FIXTURE = path.resolve(import.meta.dirname, "..", "fixtures", "pi-sessions", "pi-v3-model-switches.jsonl");

let tmp: { path: string; remove(): void } | undefined;
const managers: SessionManager[] = [];
afterEach(async () => {
  for (const manager of managers.splice(0)) await manager.close().catch(() => {});
  tmp?.remove();
  tmp = undefined;
});
function track(manager: SessionManager): SessionManager {
  managers.push(manager);
  return manager;
}

/** A pi user's seat: pi's agent directory (0755, as pi makes it) and a workspace. */
function seat(): { agentDir: string; cwd: string; root: string } {
  tmp = makeTempDir("gjc-pi-own-");
  const agentDir = path.join(tmp.path, "pi-agent");
  const cwd = path.join(tmp.path, "work");
  fs.mkdirSync(cwd);
  fs.mkdirSync(agentDir, { mode: 0o755 });
  fs.chmodSync(agentDir, 0o755);
  return { agentDir, cwd, root: tmp.path };
}

/** Writes a session as pi 0.73.1 does (its v3 fixture, with `id` and `cwd`) in `<agentDir>/sessions/--<cwd>--/`, 0755/0644, modified at `mtime`. */
function piWrote(agentDir: string, cwd: string, id: string, mtime: Date): string {
  const lines = fs.readFileSync(FIXTURE, "utf8").split("\n");
  lines[0] = JSON.stringify({ ...JSON.parse(lines[0]!), id, cwd });
  const dir = path.join(agentDir, "sessions", `--${cwd.replace(/^[/\\]/, "").replace(/[/\\:]/g, "-")}--`);
  fs.mkdirSync(dir, { recursive: true, mode: 0o755 });
  for (const d of [path.join(agentDir, "sessions"), dir]) fs.chmodSync(d, 0o755);
  const file = path.join(dir, `${mtime.toISOString().replace(/[:.]/g, "-")}_${id}.jsonl`);
  fs.writeFileSync(file, lines.join("\n"), { mode: 0o644 });
  fs.chmodSync(file, 0o644);
  fs.utimesSync(file, mtime, mtime);
  return file;
}

const ID_OLD = "019de3a0-5c00-7a2b-8c3d-4e5f60710001";
const ID_NEW = "019de3a0-5c00-7a2b-8c3d-4e5f60710002";
const ID_GONE = "019de3a0-5c00-7a2b-8c3d-4e5f60710003";
const options = (agentDir: string) => ({ agentDir, terminalId: null, logger: recordingLogger() });
const folderOf = (file: string) => path.basename(path.dirname(file));

describe("pi's agent directory", () => {
  it("is $PI_CODING_AGENT_DIR (a leading ~/ is home), else ~/.pi/agent: never GJC's", () => {
    expect(piAgentDir({}, "/home/u")).toBe("/home/u/.pi/agent");
    expect(piAgentDir({ GJC_CODING_AGENT_DIR: "/g" }, "/home/u")).toBe("/home/u/.pi/agent");
    expect(piAgentDir({ PI_CODING_AGENT_DIR: "~/pi" }, "/home/u")).toBe("/home/u/pi");
    expect(piAgentDir({ PI_CODING_AGENT_DIR: "/opt/pi", GJC_CODING_AGENT_DIR: "/g" }, "/home/u")).toBe("/opt/pi");
  });

  it("new sessions go to a managed scope below $PI_CODING_AGENT_DIR even when GJC's variable names another directory", () => {
    const { agentDir, cwd, root } = seat();
    const saved = { pi: process.env.PI_CODING_AGENT_DIR, gjc: process.env.GJC_CODING_AGENT_DIR };
    process.env.PI_CODING_AGENT_DIR = agentDir;
    process.env.GJC_CODING_AGENT_DIR = path.join(root, "gjc-agent");
    try {
      const manager = track(SessionManager.create(cwd, undefined, { terminalId: null }));
      manager.appendMessage(user("q"));
      manager.appendMessage(assistant("a"));
      expect(path.dirname(manager.getSessionFile()!)).toBe(getDefaultSessionDir(cwd));
      expect(manager.getSessionFile()!.startsWith(path.join(agentDir, "sessions", "v2-"))).toBe(true);
      expect(fs.existsSync(path.join(root, "gjc-agent"))).toBe(false);
    } finally {
      for (const [name, value] of [
        ["PI_CODING_AGENT_DIR", saved.pi],
        ["GJC_CODING_AGENT_DIR", saved.gjc],
      ] as const) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
    }
  });
});

describe("the sessions pi wrote before the switch", () => {
  it("continueRecent resumes pi's newest, copied into the scope: the source byte-identical, pi's folder modes kept, the tightening reported once", async () => {
    const { agentDir, cwd } = seat();
    piWrote(agentDir, cwd, ID_OLD, new Date("2026-05-01T10:00:00Z"));
    const newest = piWrote(agentDir, cwd, ID_NEW, new Date("2026-05-02T10:00:00Z"));
    const piFolder = path.dirname(newest);
    const before = treeState(piFolder);
    const tightened: string[][] = [];
    const resumed = track(SessionManager.continueRecent(cwd, undefined, { ...options(agentDir), onTightened: (dirs) => tightened.push([...dirs]) }));
    const file = resumed.getSessionFile()!;
    expect(file).not.toBe(newest);
    expect(path.dirname(file)).toBe(getDefaultSessionDir(cwd, agentDir));
    expect(resumed.getHeader().id).toBe(ID_NEW);
    expect(fs.readFileSync(file)).toEqual(fs.readFileSync(newest));
    expect(resumed.buildSessionContext().model).toEqual({ provider: "faux", modelId: "faux-2" });
    resumed.appendMessage(user("after the switch"));
    resumed.appendMessage(assistant("answered in the copy"));
    expect(treeState(piFolder)).toEqual(before);
    expect(fs.statSync(piFolder).mode & 0o777).toBe(0o755);
    // Managed storage keeps its chain owner-only: pi's agent directory and sessions root were made 0700, and said so, once.
    expect(fs.statSync(agentDir).mode & 0o777).toBe(0o700);
    expect(tightened).toEqual([[agentDir, path.join(agentDir, "sessions")]]);
    track(SessionManager.create(cwd, undefined, { ...options(agentDir), onTightened: (dirs) => tightened.push([...dirs]) }));
    expect(tightened).toHaveLength(1);
  });

  it("by default the tightening is one line on stderr (pi silences process warnings)", () => {
    const { agentDir, cwd } = seat();
    const printed = vi.spyOn(console, "error").mockImplementation(() => {});
    try {
      track(SessionManager.create(cwd, undefined, options(agentDir)));
      expect(printed).toHaveBeenCalledTimes(1);
      expect(String(printed.mock.calls[0]![0])).toContain(`made ${JSON.stringify(agentDir)} owner-only (mode 0700`);
    } finally {
      printed.mockRestore();
    }
  });

  it("list, listAll and open find pi's sessions; each session is listed once, before and after its copy, and opened again it is the same copy", async () => {
    const { agentDir, cwd, root } = seat();
    const older = piWrote(agentDir, cwd, ID_OLD, new Date("2026-05-01T10:00:00Z"));
    piWrote(agentDir, cwd, ID_NEW, new Date("2026-05-02T10:00:00Z"));
    const gone = piWrote(agentDir, path.join(root, "deleted-workspace"), ID_GONE, new Date("2026-05-03T10:00:00Z"));
    const before = treeState(path.join(agentDir, "sessions"));
    const listed = await SessionManager.list(cwd, undefined, undefined, options(agentDir));
    expect(listed.map((s) => s.id).sort()).toEqual([ID_OLD, ID_NEW]);
    expect(listed.every((s) => s.messageCount > 5 && s.firstMessage !== "(no messages)")).toBe(true);
    const all = await SessionManager.listAll(undefined, options(agentDir));
    expect(all.map((s) => s.id).sort()).toEqual([ID_OLD, ID_NEW, ID_GONE]);
    // Listing never writes.
    expect(treeState(path.join(agentDir, "sessions"))).toEqual(before);

    // pi's picker opens the path it listed.
    const opened = track(SessionManager.open(older, undefined, undefined, options(agentDir)));
    const copy = opened.getSessionFile()!;
    expect(folderOf(copy)).toMatch(/^v2-/);
    expect(opened.getHeader().id).toBe(ID_OLD);
    await opened.close();
    const again = track(SessionManager.open(older, undefined, undefined, options(agentDir)));
    expect(again.getSessionFile()).toBe(copy);
    const afterAll = await SessionManager.listAll(undefined, options(agentDir));
    expect(afterAll.map((s) => s.id).sort()).toEqual([ID_OLD, ID_NEW, ID_GONE]);
    expect(afterAll.find((s) => s.id === ID_OLD)!.path).toBe(copy);
    const afterList = await SessionManager.list(cwd, undefined, undefined, options(agentDir));
    expect(afterList.map((s) => s.id).sort()).toEqual([ID_OLD, ID_NEW]);
    for (const file of [older, gone]) expect(fs.statSync(file).mode & 0o777).toBe(0o644);
  });

  it("a deleted workspace's session opens read-only (pi then asks for a directory); opened with that directory it continues as a fork there", async () => {
    const { agentDir, cwd, root } = seat();
    const gone = piWrote(agentDir, path.join(root, "deleted-workspace"), ID_GONE, new Date("2026-05-03T10:00:00Z"));
    const bytes = fs.readFileSync(gone);
    const readOnly = track(SessionManager.open(gone, undefined, undefined, options(agentDir)));
    expect(readOnly.getCwd()).toBe(path.join(root, "deleted-workspace"));
    expect(readOnly.isPersisted()).toBe(false);
    expect(readOnly.getEntries().length).toBeGreaterThan(5);
    const fork = track(SessionManager.open(gone, undefined, cwd, options(agentDir)));
    expect(fork.getCwd()).toBe(cwd);
    expect(path.dirname(fork.getSessionFile()!)).toBe(getDefaultSessionDir(cwd, agentDir));
    expect(fork.getHeader().parentSession).toBe(gone);
    expect(fork.getEntries().length).toBe(readOnly.getEntries().length);
    fork.appendMessage(user("continued"));
    expect(fs.readFileSync(gone)).toEqual(bytes);
  });
});

describe("two `pi -c` at once (real processes)", () => {
  let child: BundledChild;
  beforeAll(async () => {
    child = await bundleChild("pi-continue-child", path.join(import.meta.dirname, "children"));
  }, 120_000);
  afterAll(() => child.remove());

  /** Starts `pi -c` in `cwd` and resolves to its JSON line; the process keeps its session until `stop`. */
  function piContinue(cwd: string, agentDir: string): { result: Promise<{ file: string; id: string; resumed: number; skipped: string[] }>; stop(): void } {
    const proc = startChild(child, [cwd], { PI_CODING_AGENT_DIR: agentDir });
    let out = "";
    let err = "";
    proc.stderr?.on("data", (chunk: Buffer) => (err += chunk.toString()));
    const result = new Promise<{ file: string; id: string; resumed: number; skipped: string[] }>((resolve, reject) => {
      proc.stdout?.on("data", (chunk: Buffer) => {
        out += chunk.toString();
        if (out.includes("\n")) resolve(JSON.parse(out.slice(0, out.indexOf("\n"))));
      });
      proc.on("close", (status) => reject(new Error(`pi -c ended with ${status} before answering: ${err}`)));
    });
    return { result, stop: () => proc.kill("SIGTERM") };
  }

  it("the second passes over the session the first holds and starts its own", async () => {
    const { agentDir, cwd } = seat();
    const held = track(SessionManager.create(cwd, undefined, options(agentDir)));
    held.appendMessage(user("earlier"));
    held.appendMessage(assistant("work"));
    const earlier = held.getSessionFile()!;
    await held.close();
    const first = piContinue(cwd, agentDir);
    try {
      const a = await first.result;
      expect(a.file).toBe(earlier);
      const second = piContinue(cwd, agentDir);
      try {
        const b = await second.result;
        expect(b.file).not.toBe(earlier);
        expect(b.resumed).toBe(0);
        expect(b.skipped).toEqual(["session_busy"]);
      } finally {
        second.stop();
      }
    } finally {
      first.stop();
    }
  });

  it("on a workspace whose sessions pi wrote before the switch: started together, each resumes its own copy, pi's files untouched", async () => {
    const { agentDir, cwd } = seat();
    piWrote(agentDir, cwd, ID_OLD, new Date("2026-05-01T10:00:00Z"));
    const newest = piWrote(agentDir, cwd, ID_NEW, new Date("2026-05-02T10:00:00Z"));
    const before = treeState(path.dirname(newest));
    const runs = [piContinue(cwd, agentDir), piContinue(cwd, agentDir)];
    try {
      const results = await Promise.all(runs.map((r) => r.result));
      expect(results.map((r) => r.id).sort()).toEqual([ID_OLD, ID_NEW]);
      for (const r of results) expect(folderOf(r.file)).toMatch(/^v2-/);
      expect(treeState(path.dirname(newest))).toEqual(before);
      const listed = await SessionManager.listAll(undefined, options(agentDir));
      expect(listed.map((s) => s.id).sort()).toEqual([ID_OLD, ID_NEW]);
    } finally {
      for (const r of runs) r.stop();
    }
  });
});
