/**
 * An atomic rewrite killed mid-way leaves its temporary; the next writer of that session
 * removes it (its own, found by the digest of the file name in the temporary's name, on the
 * held directory descriptor) and leaves every other file's temporaries alone; `audit --fix`
 * removes a stale one.
 */
import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";

import { afterEach, beforeEach, describe, expect, it } from "vitest";

import { auditAgentDir, FileSessionStorage, ManagedSessionStorage, resolveManagedScopeOrThrow } from "../../src/index.js";
import { temporaryName } from "../../src/storage/paths.js";
import { stagingPrefixOf } from "../../src/storage/stale-staging.js";
import { makeTempDir } from "../helpers/temp.js";
import { bundleManagerChild } from "../manager/child.js";

let tmp: { path: string; remove(): void };
let agentDir: string;
let root: string;
const NAME = "2025-01-01T00-00-00-000Z_0190a0b0-3e82-7000-8000-000000000001.jsonl";
const OTHER = "2025-01-02T00-00-00-000Z_0190a0b0-3e82-7000-8000-000000000002.jsonl";

beforeEach(() => {
  tmp = makeTempDir("gjc-stale-staging-");
  agentDir = path.join(tmp.path, "agent");
  // A managed scope, so `audit --fix` knows the agent dir and the folder as the store's.
  const cwd = path.join(tmp.path, "work");
  fs.mkdirSync(cwd);
  root = resolveManagedScopeOrThrow({ cwd, agentDir, mode: "write" }).directoryPath;
});
afterEach(() => tmp.remove());

/** The audit's path of `name` in the scope. */
const relOf = (name: string): string => path.relative(agentDir, path.join(root, name)).split(path.sep).join("/");

const temporaries = (): string[] =>
  fs
    .readdirSync(root)
    .filter((name) => name.startsWith(".gjc-tmp-"))
    .sort();

/** Starts a child rewriting `NAME` and kills it once its temporary is on disk. */
async function killMidRewrite(script: string): Promise<string> {
  const child = spawn(process.execPath, [script, root, NAME, "192"], { stdio: ["ignore", "pipe", "inherit"] });
  const exited = new Promise((resolve) => child.once("exit", resolve));
  try {
    await new Promise<void>((resolve, reject) => {
      child.stdout!.on("data", (chunk: Buffer) => (chunk.toString().includes("writing") ? resolve() : undefined));
      child.once("exit", (status) => reject(new Error(`child exited with ${status}`)));
    });
    for (let polls = 0; polls < 20_000; polls++) {
      const found = temporaries();
      if (found.length > 0) return found[0]!;
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
    throw new Error("no temporary appeared");
  } finally {
    child.kill("SIGKILL");
    await exited;
  }
}

/** The temporary a rewrite of `NAME` killed mid-way left behind. */
async function killedRewriteTemporary(): Promise<string> {
  const child = await bundleManagerChild("rewrite-loop");
  try {
    return await killMidRewrite(child.file);
  } finally {
    child.remove();
  }
}

describe("stale temporaries of a killed rewrite", () => {
  it("are named for their file, and the next writer of that file removes them, and only them", async () => {
    const left = await killedRewriteTemporary();
    expect(left.startsWith(stagingPrefixOf(NAME))).toBe(true);
    expect(temporaries()).toContain(left);

    // Another file's temporary, and a directory wearing this file's prefix, are not this writer's to remove.
    const foreign = `${stagingPrefixOf(OTHER)}0badc0de`;
    fs.writeFileSync(path.join(root, foreign), "other", { mode: 0o600 });
    const planted = `${stagingPrefixOf(NAME)}00000001`;
    fs.writeFileSync(path.join(root, planted), "left by another kill", { mode: 0o600 });
    const notAFile = `${stagingPrefixOf(NAME)}00000002`;
    fs.mkdirSync(path.join(root, notAFile), { mode: 0o700 });

    const storage = ManagedSessionStorage.open(root);
    const writer = storage.openWriter(path.join(root, NAME));
    expect(temporaries()).toEqual([foreign, notAFile].sort());
    await writer.writeLine("{}");
    await writer.close();
    storage.close();
  });

  it("the prefix is the FNV-1a digest of the UTF-8 name", () => {
    expect(stagingPrefixOf("")).toBe(".gjc-tmp-811c9dc5");
    expect(stagingPrefixOf("a")).toBe(".gjc-tmp-e40c292c");
  });

  it("audit reports a stale temporary as fixable and --fix removes it", async () => {
    const left = await killedRewriteTemporary();
    const hoursAgo = Date.now() / 1000 - 7200;
    fs.utimesSync(path.join(root, left), hoursAgo, hoursAgo);
    const rel = relOf(left);
    const before = auditAgentDir(agentDir);
    expect(before.objects.find((o) => o.path === rel)?.findings).toEqual([expect.objectContaining({ code: "stale_staging_file", fixable: true })]);
    const fixed = auditAgentDir(agentDir, { fix: true });
    expect(fixed.repairs).toContainEqual({ path: rel, codes: ["stale_staging_file"], outcome: "repaired" });
    expect(fixed.objects.find((o) => o.path === rel)).toBeUndefined();
    expect(temporaries()).toEqual([]);
  });

  it("audit --fix sweeps a recent temporary of a session no writer holds, and leaves one whose session is being written", async () => {
    const left = await killedRewriteTemporary();
    const rel = relOf(left);
    expect(fs.existsSync(path.join(root, NAME))).toBe(true);
    // Too recent to call stale: a report changes nothing and names nothing.
    expect(auditAgentDir(agentDir).objects.find((o) => o.path === rel)).toBeUndefined();
    expect(temporaries()).toContain(left);

    // While a writer holds the session, its temporaries may be in use: --fix leaves them.
    const storage = ManagedSessionStorage.open(root);
    const planted = `${stagingPrefixOf(NAME)}0000000a`;
    const writer = storage.openWriter(path.join(root, NAME));
    fs.writeFileSync(path.join(root, planted), "a rewrite in progress", { mode: 0o600 });
    expect(auditAgentDir(agentDir, { fix: true }).repairs).toEqual([]);
    expect(temporaries()).toEqual([planted]);
    await writer.close();
    storage.close();

    fs.writeFileSync(path.join(root, left), "left by the kill", { mode: 0o600 });
    const fixed = auditAgentDir(agentDir, { fix: true });
    expect(fixed.repairs).toEqual(
      expect.arrayContaining([
        { path: rel, codes: ["stale_staging_file"], outcome: "repaired" },
        { path: relOf(planted), codes: ["stale_staging_file"], outcome: "repaired" },
      ]),
    );
    expect(fixed.objects.find((o) => o.path === rel)).toBeUndefined();
    expect(temporaries()).toEqual([]);
  });

  it("plain file storage: the next writer removes the `.<name>.<hex>.tmp` temporaries of its own file only", async () => {
    const own = [temporaryName(NAME), temporaryName(NAME)];
    const foreign = temporaryName(OTHER);
    for (const name of [...own, foreign]) fs.writeFileSync(path.join(root, name), "left", { mode: 0o600 });
    const linked = temporaryName(NAME);
    fs.symlinkSync(path.join(tmp.path, "outside"), path.join(root, linked));
    const storage = new FileSessionStorage(root);
    const writer = storage.openWriter(path.join(root, NAME));
    const left = fs
      .readdirSync(root)
      .filter((name) => name.endsWith(".tmp"))
      .sort();
    expect(left).toEqual([foreign, linked].sort());
    await writer.close();
  });
});
