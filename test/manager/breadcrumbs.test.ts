/**
 * Terminal breadcrumbs on a real directory: exact content and modes, what makes one ignored,
 * which terminal ids are accepted, and which environment variable decides the id.
 */
import fs from "node:fs";
import path from "node:path";

import { afterEach, beforeEach, describe, expect, it } from "vitest";

import { FileSessionStorage, MemorySessionStorage } from "../../src/index.js";
import {
  BREADCRUMB_MAX_BYTES,
  TERMINAL_SESSIONS_DIR,
  isSafeTerminalId,
  readBreadcrumb,
  resolveBreadcrumb,
  stdinTtyPath,
  terminalIdFromEnv,
  writeBreadcrumb,
} from "../../src/manager/index.js";
import { makeTempDir, withUmask } from "../helpers/temp.js";

let temp: ReturnType<typeof makeTempDir>;
let agent: string;
let sessionFile: string;
beforeEach(() => {
  temp = makeTempDir("gjc-breadcrumbs-");
  agent = path.join(temp.path, "agent");
  sessionFile = path.join(temp.path, "sessions", "s.jsonl");
  fs.mkdirSync(path.dirname(sessionFile));
  fs.writeFileSync(sessionFile, "{}\n");
});
afterEach(() => temp.remove());

describe("write and read", () => {
  it("round-trips exactly two lines, owner-only, even under a permissive umask", async () => {
    const result = withUmask(0, () => writeBreadcrumb(agent, "tmux-%3", "/work/project", sessionFile));
    const file = path.join(agent, TERMINAL_SESSIONS_DIR, "tmux-%3");
    expect(result).toEqual({ ok: true, path: file });
    expect(fs.readFileSync(file, "utf8")).toBe(`/work/project\n${sessionFile}\n`);
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    expect(fs.statSync(path.join(agent, TERMINAL_SESSIONS_DIR)).mode & 0o777).toBe(0o700);
    expect(fs.readdirSync(path.dirname(file)).filter((name) => !name.startsWith(".") || name.endsWith(".tmp"))).toEqual(["tmux-%3"]);
    expect(await readBreadcrumb(agent, "tmux-%3")).toEqual({ kind: "found", cwd: "/work/project", sessionFile });

    expect(writeBreadcrumb(agent, "tmux-%3", "/work/other", sessionFile).ok).toBe(true);
    expect(await readBreadcrumb(agent, "tmux-%3")).toMatchObject({ cwd: "/work/other" });
  });

  it("works through any storage rooted at the agent directory", async () => {
    const storage = new MemorySessionStorage({ root: "/agent" });
    expect(writeBreadcrumb(storage, "pts-1", "/w", "/agent/sessions/x.jsonl")).toEqual({
      ok: true,
      path: "/agent/terminal-sessions/pts-1",
    });
    expect(await readBreadcrumb(storage, "pts-1")).toEqual({ kind: "found", cwd: "/w", sessionFile: "/agent/sessions/x.jsonl" });
  });

  it("never throws on a failed write and says why", () => {
    fs.mkdirSync(agent);
    fs.writeFileSync(path.join(agent, TERMINAL_SESSIONS_DIR), "a file, not a directory");
    expect(writeBreadcrumb(agent, "pts-1", "/w", sessionFile)).toEqual({ ok: false, code: "write_failed", storageCode: "not_directory" });
    fs.rmSync(path.join(agent, TERMINAL_SESSIONS_DIR));
    fs.symlinkSync(temp.path, path.join(agent, TERMINAL_SESSIONS_DIR));
    expect(writeBreadcrumb(agent, "pts-1", "/w", sessionFile)).toEqual({ ok: false, code: "write_failed", storageCode: "symlink_refused" });
    expect(fs.existsSync(path.join(temp.path, "pts-1"))).toBe(false);
    expect(writeBreadcrumb("relative/agent", "pts-1", "/w", sessionFile)).toEqual({ ok: false, code: "write_failed", storageCode: "invalid_path" });
  });

  it("refuses paths two lines cannot carry", () => {
    for (const [cwd, file] of [
      ["relative", sessionFile],
      ["/w", "s.jsonl"],
      ["/w\n/x", sessionFile],
      ["/w", `${sessionFile}\r`],
      ["/w\0", sessionFile],
    ]) {
      expect(writeBreadcrumb(agent, "pts-1", cwd!, file!)).toEqual({ ok: false, code: "unrepresentable_path" });
    }
    expect(fs.existsSync(agent)).toBe(false);
  });

  it("reports a missing breadcrumb, malformed content, and a link in its place", async () => {
    expect(await readBreadcrumb(agent, "pts-1")).toEqual({ kind: "none", reason: "missing" });
    const dir = path.join(agent, TERMINAL_SESSIONS_DIR);
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    const malformed = ["/w\n", "/w\n/s.jsonl", "/w\n/s.jsonl\n/extra\n", "w\n/s.jsonl\n", "/w\n\n", `/w\n/${"s".repeat(BREADCRUMB_MAX_BYTES)}\n`];
    for (const content of malformed) {
      fs.writeFileSync(path.join(dir, "pts-1"), content, { mode: 0o600 });
      expect(await readBreadcrumb(agent, "pts-1"), JSON.stringify(content.slice(0, 40))).toEqual({ kind: "none", reason: "malformed" });
    }
    fs.rmSync(path.join(dir, "pts-1"));
    fs.symlinkSync(sessionFile, path.join(dir, "pts-1"));
    expect(await readBreadcrumb(agent, "pts-1")).toEqual({ kind: "none", reason: "unreadable", storageCode: "symlink_refused" });
  });
});

describe("resolve", () => {
  it("is honoured only for the same cwd (after path.resolve) and an existing regular session file", async () => {
    writeBreadcrumb(agent, "pts-2", "/work/project", sessionFile);
    expect(await resolveBreadcrumb(agent, "pts-2", "/work/./project/")).toEqual({
      kind: "resolved",
      cwd: "/work/project",
      sessionFile,
    });
    expect(await resolveBreadcrumb(agent, "pts-2", "/work/project-2")).toEqual({ kind: "ignored", reason: "cwd_mismatch" });
    expect(await resolveBreadcrumb(agent, "pts-9", "/work/project")).toEqual({ kind: "ignored", reason: "missing" });
    expect(await resolveBreadcrumb(agent, "../x", "/work/project")).toEqual({ kind: "ignored", reason: "unsafe_terminal_id" });

    const storage = new FileSessionStorage(path.dirname(sessionFile));
    expect(await resolveBreadcrumb(agent, "pts-2", "/work/project", { sessionStorage: storage })).toMatchObject({ kind: "resolved" });
    fs.renameSync(sessionFile, `${sessionFile}.moved`);
    fs.symlinkSync(`${sessionFile}.moved`, sessionFile);
    expect(await resolveBreadcrumb(agent, "pts-2", "/work/project")).toEqual({ kind: "ignored", reason: "session_missing" });
    expect(await resolveBreadcrumb(agent, "pts-2", "/work/project", { sessionStorage: storage })).toEqual({ kind: "ignored", reason: "session_missing" });
    fs.rmSync(sessionFile);
    expect(await resolveBreadcrumb(agent, "pts-2", "/work/project")).toEqual({ kind: "ignored", reason: "session_missing" });
  });
});

describe("terminal ids", () => {
  it("accepts real terminal ids and rejects anything that is not one safe file name", () => {
    for (const id of ["tmux-%3", "pts-3", "ttys003", "kitty-12", "wt-1b4e28ba-2fa1-11d2-883f-0016d3cca427"]) {
      expect(isSafeTerminalId(id), id).toBe(true);
    }
    expect(isSafeTerminalId("apple-w0t0p0:7A1B2C3D")).toBe(process.platform !== "win32");
    for (const id of ["", ".", "..", ".hidden", "a/b", "../x", "a\\b", "a b", "a\0b", "a\nb", "x.", "-x", "x".repeat(201), "é"]) {
      expect(isSafeTerminalId(id), JSON.stringify(id)).toBe(false);
    }
  });

  it("refuses to write or read under an unsafe id", async () => {
    expect(writeBreadcrumb(agent, "../escape", "/w", sessionFile)).toEqual({ ok: false, code: "unsafe_terminal_id" });
    expect(await readBreadcrumb(agent, "a/b")).toEqual({ kind: "none", reason: "unsafe_terminal_id" });
    expect(fs.existsSync(agent)).toBe(false);
  });

  it("takes the first source that applies: tmux pane, stdin tty, kitty, bare pane, Terminal.app, Windows Terminal", () => {
    const all = { TMUX: "/tmp/tmux-0/default,1,0", TMUX_PANE: "%7", KITTY_WINDOW_ID: "4", TERM_SESSION_ID: "w0t1p0", WT_SESSION: "abc-1" };
    expect(terminalIdFromEnv(all, "/dev/pts/3")).toEqual({ kind: "terminal", id: "tmux-%7", source: "tmux" });
    const { TMUX: _tmux, ...noTmux } = all;
    expect(terminalIdFromEnv(noTmux, "/dev/pts/3")).toEqual({ kind: "terminal", id: "pts-3", source: "tty" });
    expect(terminalIdFromEnv(noTmux, "/dev/ttys003")).toEqual({ kind: "terminal", id: "ttys003", source: "tty" });
    expect(terminalIdFromEnv(noTmux, "/not/dev/pts/3")).toEqual({ kind: "terminal", id: "kitty-4", source: "kitty" });
    expect(terminalIdFromEnv(noTmux)).toEqual({ kind: "terminal", id: "kitty-4", source: "kitty" });
    const { KITTY_WINDOW_ID: _kitty, ...noKitty } = noTmux;
    expect(terminalIdFromEnv(noKitty)).toEqual({ kind: "terminal", id: "tmux-%7", source: "tmux" });
    const { TMUX_PANE: _pane, ...noPane } = noKitty;
    expect(terminalIdFromEnv(noPane)).toEqual({ kind: "terminal", id: "apple-w0t1p0", source: "apple-terminal" });
    const { TERM_SESSION_ID: _apple, ...onlyWt } = noPane;
    expect(terminalIdFromEnv(onlyWt)).toEqual({ kind: "terminal", id: "wt-abc-1", source: "windows-terminal" });
    expect(terminalIdFromEnv({})).toEqual({ kind: "none", reason: "no_terminal" });
    expect(terminalIdFromEnv({ TMUX: "x", TMUX_PANE: "", KITTY_WINDOW_ID: "" })).toEqual({ kind: "none", reason: "no_terminal" });
  });

  it("gives no id when the deciding value is unsafe, without falling back to a weaker source", () => {
    expect(terminalIdFromEnv({ TMUX: "x", TMUX_PANE: "%1/../../x", KITTY_WINDOW_ID: "4" })).toEqual({ kind: "none", reason: "unsafe_id" });
    expect(terminalIdFromEnv({ KITTY_WINDOW_ID: "4" }, "/dev/pts/../../etc")).toEqual({ kind: "none", reason: "unsafe_id" });
    expect(terminalIdFromEnv({ WT_SESSION: "a b" })).toEqual({ kind: "none", reason: "unsafe_id" });
  });

  it("reads no stdin terminal path when stdin is not a terminal", (ctx) => {
    if (process.stdin.isTTY === true) {
      console.warn(`[skipped] ${ctx.task.name}: this run has a terminal on stdin`);
      ctx.skip();
    }
    expect(stdinTtyPath()).toBeUndefined();
  });
});
