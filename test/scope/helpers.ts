/**
 * Shared pieces of the scope and migration tests: a fresh agent dir + workspace pair, and a
 * snapshot of a tree (inode, mode, mtime, bytes) to prove that read paths write nothing.
 */
import fs from "node:fs";
import path from "node:path";

import { afterEach } from "vitest";

import { makeTempDir } from "../helpers/temp.js";

/** A temporary home holding `agent/` and `work/` (the workspace). */
export interface Sandbox {
  readonly root: string;
  readonly agentDir: string;
  readonly cwd: string;
  remove(): void;
}

/** Makes a sandbox; `agent/` is not created (resolution for write must make it). */
export function makeSandbox(): Sandbox {
  const temp = makeTempDir("gjc-scope-");
  const cwd = path.join(temp.path, "work");
  fs.mkdirSync(cwd);
  return { root: temp.path, agentDir: path.join(temp.path, "agent"), cwd, remove: () => temp.remove() };
}

/**
 * Registers cleanup in the calling test file and returns a factory of sandboxes that are
 * removed after each test.
 */
export function useSandboxes(): () => Sandbox {
  const boxes: Sandbox[] = [];
  afterEach(() => boxes.splice(0).forEach((b) => b.remove()));
  return () => {
    const box = makeSandbox();
    boxes.push(box);
    return box;
  };
}

/** Every entry below `root` with the metadata a write would change. */
export function treeState(root: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (dir: string) => {
    let st: fs.Stats;
    try {
      st = fs.lstatSync(dir);
    } catch {
      return;
    }
    out[dir] = `${st.ino}:${st.mode}:${st.mtimeMs}:${st.ctimeMs}:${st.isFile() ? fs.readFileSync(dir, "hex") : ""}`;
    if (st.isDirectory()) for (const name of fs.readdirSync(dir)) walk(path.join(dir, name));
  };
  walk(root);
  return out;
}
