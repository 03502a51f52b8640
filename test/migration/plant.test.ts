/**
 * Objects planted at legacy paths: a linked legacy directory, a transcript that is a link, a
 * hard link, a FIFO, writable by others or owned by another user, and such artifacts. Listing
 * reports each with its code and reads nothing through it; migrating a listed version that was
 * replaced by one is refused typed (`unsafe_source`) and publishes nothing; what the planted
 * objects lead to stays untouched. And a migrated copy keeps its source's times, so the newest
 * session by mtime is still the newest one written.
 */
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";

import { describe, expect, it } from "vitest";

import { openCandidateForWrite, SessionManager } from "../../src/index.js";
import { BINDING_FILE_NAME } from "../../src/scope/index.js";
import { isRoot } from "../helpers/processes.js";
import { assistant, recordingLogger } from "../manager/helpers.js";
import { treeState, useSandboxes, type Sandbox } from "../scope/helpers.js";
import { candidateAt, legacyName, listed, scopeOf, writeLegacySession } from "./fixtures.js";

const sandbox = useSandboxes();

/** An outside tree holding a valid session of `cwd` (it would list and migrate if it were read). */
function outsideTree(box: Sandbox): { dir: string; session: string } {
  const dir = path.join(box.root, "outside");
  const session = writeLegacySession(dir, box.cwd, { dirName: "tree", artifacts: { "secret.log": "outside secret" } });
  return { dir, session };
}

/** Only the binding and the internal directory are in the scope: nothing was published. */
function expectNothingPublished(scopeDir: string): void {
  const names = fs.existsSync(scopeDir) ? fs.readdirSync(scopeDir) : [];
  expect(names.filter((n) => n !== BINDING_FILE_NAME && n !== ".gjc-managed-session-internal")).toEqual([]);
}

describe("planted objects at legacy paths", () => {
  it("a legacy directory that is a link is reported, and nothing below it is read", async () => {
    const box = sandbox();
    const scope = scopeOf(box.cwd, box.agentDir);
    const outside = outsideTree(box);
    fs.mkdirSync(scope.sessionsRoot, { recursive: true, mode: 0o700 });
    fs.symlinkSync(path.join(outside.dir, "tree"), path.join(scope.sessionsRoot, legacyName(box.cwd)));
    const before = treeState(outside.dir);
    const listing = await listed(scope);
    expect(listing.candidates).toEqual([]);
    expect(listing.scanErrors).toContainEqual({ path: path.join(scope.sessionsRoot, legacyName(box.cwd)), code: "symlink" });
    expect(treeState(outside.dir)).toEqual(before);
  });

  it("a transcript that is a link, a hard link, a FIFO or writable by others is listed as invalid with its code", async () => {
    const box = sandbox();
    const scope = scopeOf(box.cwd, box.agentDir);
    const outside = outsideTree(box);
    const good = writeLegacySession(scope.sessionsRoot, box.cwd);
    const dir = path.dirname(good);
    const plants: Record<string, string> = {
      symlink: path.join(dir, "2026-01-01T00-00-00-000Z_link.jsonl"),
      hardlink: path.join(dir, "2026-01-01T00-00-00-000Z_hard.jsonl"),
      not_regular_file: path.join(dir, "2026-01-01T00-00-00-000Z_fifo.jsonl"),
      mode_mismatch: path.join(dir, "2026-01-01T00-00-00-000Z_wide.jsonl"),
    };
    fs.symlinkSync(outside.session, plants.symlink as string);
    fs.linkSync(outside.session, plants.hardlink as string);
    execFileSync("mkfifo", [plants.not_regular_file as string]);
    fs.copyFileSync(good, plants.mode_mismatch as string);
    fs.chmodSync(plants.mode_mismatch as string, 0o666);
    const before = treeState(outside.dir);
    const listing = await listed(scope);
    expect(listing.candidates.map((c) => c.path)).toEqual([good]);
    for (const [code, file] of Object.entries(plants)) expect(listing.invalid).toContainEqual({ path: file, code });
    expect(treeState(outside.dir)).toEqual(before);
  });

  it("a listed transcript replaced by a link or a hard link -> unsafe_source, nothing published, the outside untouched", async () => {
    const box = sandbox();
    const scope = scopeOf(box.cwd, box.agentDir);
    const outside = outsideTree(box);
    const replace: [string, (file: string) => void][] = [
      ["symlink", (file) => fs.symlinkSync(outside.session, file)],
      ["hardlink", (file) => fs.linkSync(outside.session, file)],
    ];
    const listedVersions = [];
    for (const [cause, plant] of replace) {
      const file = writeLegacySession(scope.sessionsRoot, box.cwd, { artifacts: { "1.log": "mine" } });
      listedVersions.push({ cause, file, plant, candidate: await candidateAt(scope, file) });
    }
    for (const { file, plant } of listedVersions) {
      fs.unlinkSync(file);
      plant(file);
    }
    // Taken once the links are made (a hard link changes its target's ctime).
    const before = treeState(outside.dir);
    for (const { cause, candidate } of listedVersions) {
      expect(await openCandidateForWrite(scope, candidate)).toMatchObject({ kind: "error", code: "unsafe_source", cause });
    }
    expectNothingPublished(scope.directoryPath);
    expect(treeState(outside.dir)).toEqual(before);
  });

  it("a forged candidate naming a file outside the sessions root -> not_a_candidate, nothing written or read", async () => {
    const box = sandbox();
    const scope = scopeOf(box.cwd, box.agentDir);
    const file = writeLegacySession(scope.sessionsRoot, box.cwd);
    const candidate = await candidateAt(scope, file);
    const outside = outsideTree(box);
    const before = { agent: treeState(box.agentDir), outside: treeState(outside.dir) };
    const forged = [
      { ...candidate, path: outside.session },
      { ...candidate, path: outside.session, legacyDirectory: path.relative(scope.sessionsRoot, path.dirname(outside.session)) },
      { ...candidate, legacyDirectory: ".." },
    ];
    for (const c of forged) expect(await openCandidateForWrite(scope, c)).toMatchObject({ kind: "error", code: "not_a_candidate" });
    expect({ agent: treeState(box.agentDir), outside: treeState(outside.dir) }).toEqual(before);
  });

  it("an artifact writable by others -> unsafe_artifacts (mode_mismatch)", async () => {
    const box = sandbox();
    const scope = scopeOf(box.cwd, box.agentDir);
    const file = writeLegacySession(scope.sessionsRoot, box.cwd, { artifacts: { "1.log": "x" } });
    fs.chmodSync(path.join(file.slice(0, -6), "1.log"), 0o646);
    expect(await openCandidateForWrite(scope, await candidateAt(scope, file))).toMatchObject({
      kind: "error",
      code: "unsafe_artifacts",
      cause: "mode_mismatch",
    });
    expectNothingPublished(scope.directoryPath);
  });

  it.runIf(isRoot())("objects another user owns (uid 65534) are refused: transcript, legacy directory, artifact", async () => {
    const box = sandbox();
    const scope = scopeOf(box.cwd, box.agentDir);
    const theirs = writeLegacySession(scope.sessionsRoot, box.cwd);
    fs.chownSync(theirs, 65534, 65534);
    const inTheirDir = writeLegacySession(scope.sessionsRoot, box.cwd, { dirName: "-theirs" });
    fs.chownSync(path.dirname(inTheirDir), 65534, 65534);
    const listing = await listed(scope);
    expect(listing.candidates).toEqual([]);
    expect(listing.invalid).toContainEqual({ path: theirs, code: "owner_mismatch" });
    expect(listing.scanErrors).toContainEqual({ path: path.dirname(inTheirDir), code: "owner_mismatch" });

    // A listed version whose transcript is then given away, and one whose artifact is another user's.
    const mine = writeLegacySession(scope.sessionsRoot, box.cwd, { artifacts: { "1.log": "x" } });
    const candidate = await candidateAt(scope, mine);
    fs.chownSync(mine, 65534, 65534);
    expect(await openCandidateForWrite(scope, candidate)).toMatchObject({ kind: "error", code: "unsafe_source", cause: "owner_mismatch" });
    fs.chownSync(mine, 0, 0);
    fs.chownSync(path.join(mine.slice(0, -6), "1.log"), 65534, 65534);
    expect(await openCandidateForWrite(scope, await candidateAt(scope, mine))).toMatchObject({
      kind: "error",
      code: "unsafe_artifacts",
      cause: "owner_mismatch",
    });
    expectNothingPublished(scope.directoryPath);
  });
});

describe("times of a migrated copy", () => {
  it("the copy keeps its source's mtime and atime, so continueRecent resumes the newer native session", async () => {
    const box = sandbox();
    const base = { agentDir: box.agentDir, logger: recordingLogger() };
    const native = SessionManager.create(box.cwd, undefined, undefined, { ...base, terminalId: "term-native" });
    native.appendMessage(assistant(box.cwd));
    await native.close();
    const nativeFile = native.getSessionFile() as string;

    const scope = scopeOf(box.cwd, box.agentDir);
    const file = writeLegacySession(scope.sessionsRoot, box.cwd, { artifacts: { "1.log": "artifact" } });
    const january = new Date("2025-01-20T09:30:00.250Z");
    const older = new Date("2025-01-10T09:30:00.500Z");
    fs.utimesSync(file, older, january);
    fs.utimesSync(path.join(file.slice(0, -6), "1.log"), older, january);
    const source = fs.statSync(file, { bigint: true });
    const result = await openCandidateForWrite(scope, await candidateAt(scope, file));
    if (result.kind !== "opened") throw new Error(`${result.code}/${result.cause}`);
    const copy = fs.statSync(result.path, { bigint: true });
    expect(copy.mtimeNs).toBe(source.mtimeNs);
    expect(copy.atimeNs).toBe(source.atimeNs);
    expect(fs.statSync(path.join(result.path.slice(0, -6), "1.log")).mtime.toISOString()).toBe(january.toISOString());

    const resumed = await SessionManager.continueRecent(box.cwd, undefined, undefined, undefined, undefined, { ...base, terminalId: "term-elsewhere" });
    try {
      expect(resumed.getSessionFile()).toBe(nativeFile);
    } finally {
      await resumed.close();
    }
  });
});
