/**
 * The persistent listing index on a real filesystem: a listing served from it equals a
 * listing that reads every file, whatever happened to the files in between; an index that
 * cannot be trusted is ignored and replaced; nothing is written where it must not be.
 */
import fs from "node:fs";
import path from "node:path";

import fc from "fast-check";
import { afterEach, beforeEach, describe, expect, it } from "vitest";

import {
  FileSessionStorage,
  ManagedSessionStorage,
  SessionInfoCache,
  auditAgentDir,
  getRecentSessions,
  listAll,
  listSessions,
  type SessionListing,
  type SessionStorage,
} from "../../src/index.js";
import { LISTING_INDEX_FILE_NAME, MAX_LISTING_INDEX_BYTES } from "../../src/manager/index.js";
import { readListingIndex, type ListingIndex } from "../../src/manager/listing-index.js";
import { indexAccess } from "../../src/manager/sidecar-files.js";
import { makeAgentDir, type AgentFixture } from "../cli/fixtures.js";
import { hasCommand, isRoot, skipBecause } from "../helpers/processes.js";
import { makeTempDir } from "../helpers/temp.js";
import { runProcess, type BundledChild } from "../storage/child-bundle.js";
import { bundleManagerChild } from "./child.js";
import { countingStorage, filler, header, headerPatch, message } from "./discovery-fixtures.js";

/** The uid and gid of `nobody`, which owns nothing this test does not give it. */
const UNPRIVILEGED = 65534;

let temp: ReturnType<typeof makeTempDir>;
let dir: string;
beforeEach(() => {
  temp = makeTempDir("gjc-listing-index-");
  dir = path.join(temp.path, "scope");
  fs.mkdirSync(dir, { mode: 0o700 });
});
afterEach(() => temp.remove());

/** Waits until the files written so far have settled (a listing does not remember fresher ones). */
async function settle(): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, 80));
}

const indexFile = (at = dir): string => path.join(at, LISTING_INDEX_FILE_NAME);

/** What a listing that reads every file says. */
function fullRead(at = dir): Promise<SessionListing> {
  return listSessions(at, { cache: false, persistentIndex: false });
}

function sessionText(id: string, title: string, extra = ""): string {
  return header({ id, version: 5, cwd: "/w", timestamp: "2026-01-01T00:00:00.000Z" }) + message("user", `hello ${id}`) + headerPatch({ title }) + extra;
}

/** The records of the index of `at`, as a listing would trust them. */
function storedIndex(at = dir): ListingIndex | undefined {
  const storage = new FileSessionStorage(at);
  return readListingIndex(storage, indexAccess(storage, at), at);
}

function storedRecords(at = dir): number | undefined {
  return storedIndex(at)?.size;
}

describe("a listing served from the index equals one that reads every file", () => {
  type Shape = { version: 3 | 5; late: boolean; filler: 0 | 6000 | 80_000 };
  type Mutation = { file: number; kind: "append" | "rename" | "inPlace" | "replace" | "truncate" | "delete"; text: string };

  const shape: fc.Arbitrary<Shape> = fc.record({
    version: fc.constantFrom(3 as const, 5 as const),
    late: fc.boolean(),
    filler: fc.constantFrom(0 as const, 6000 as const, 80_000 as const),
  });
  const mutation: fc.Arbitrary<Mutation> = fc.record({
    file: fc.nat(4),
    kind: fc.constantFrom("append", "rename", "inPlace", "replace", "truncate", "delete"),
    text: fc.string({ minLength: 4, maxLength: 4, unit: fc.constantFrom(..."abcdefgh") }),
  });

  const MTIME_SECONDS = 1_700_000_000;

  function content(index: number, file: Shape): string {
    const id = `s${index}`;
    const head = header({ id, version: file.version, cwd: "/w", timestamp: "2026-01-01T00:00:00.000Z" }) + message("user", `question ${id}`);
    const early = headerPatch({ title: `tEARLY${index}` });
    const late = file.late ? headerPatch({ title: `tLATE${index}`, cwd: "/moved" }) : "";
    return head + early + (file.filler > 0 ? filler(file.filler) : "") + late;
  }

  function mutate(file: string, change: Mutation): void {
    if (!fs.existsSync(file)) return;
    const text = fs.readFileSync(file, "utf8");
    switch (change.kind) {
      case "append":
        fs.appendFileSync(file, message("assistant", `more ${change.text}`));
        fs.utimesSync(file, MTIME_SECONDS, MTIME_SECONDS);
        break;
      case "rename":
        fs.appendFileSync(file, headerPatch({ title: `r${change.text}` }));
        fs.utimesSync(file, MTIME_SECONDS, MTIME_SECONDS);
        break;
      case "inPlace": {
        // Same size, same mtime afterwards (whole seconds, so utimes restores it exactly): only
        // the change time tells.
        const before = fs.statSync(file, { bigint: true });
        const changed = text.replace(/"title":"t[A-Z]{4}/, `"title":"t${change.text.toUpperCase()}`);
        const fd = fs.openSync(file, "r+");
        fs.writeSync(fd, changed, 0, "utf8");
        fs.closeSync(fd);
        fs.utimesSync(file, MTIME_SECONDS, MTIME_SECONDS);
        const after = fs.statSync(file, { bigint: true });
        expect([after.size, after.mtimeNs]).toEqual([before.size, before.mtimeNs]);
        break;
      }
      case "replace": {
        const staging = path.join(path.dirname(file), `.staging-${change.text}`);
        fs.writeFileSync(staging, text.replace(/"title":"[^"]*"/g, `"title":"x${change.text}"`));
        // Whole seconds like every other file, so a later same-size rewrite can restore the
        // mtime exactly; the new inode is what tells this change.
        fs.utimesSync(staging, MTIME_SECONDS, MTIME_SECONDS);
        fs.renameSync(staging, file);
        break;
      }
      case "truncate":
        fs.truncateSync(file, Math.floor(text.length / 3));
        fs.utimesSync(file, MTIME_SECONDS, MTIME_SECONDS);
        break;
      case "delete":
        fs.rmSync(file);
        break;
    }
  }

  it("through appends, renames, same-size rewrites, replacements, truncation and deletion", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(shape, { minLength: 1, maxLength: 4 }), fc.array(mutation, { minLength: 1, maxLength: 3 }), async (shapes, changes) => {
        fs.rmSync(dir, { recursive: true, force: true });
        fs.mkdirSync(dir, { mode: 0o700 });
        const files = shapes.map((file, index) => {
          const at = path.join(dir, `f${index}.jsonl`);
          fs.writeFileSync(at, content(index, file));
          fs.utimesSync(at, MTIME_SECONDS, MTIME_SECONDS);
          return at;
        });
        const cache = new SessionInfoCache();
        const check = async (): Promise<void> => {
          const expected = await fullRead();
          expect(await listSessions(dir, { cache: false })).toEqual(expected);
          expect(await listSessions(dir, { cache })).toEqual(expected);
        };
        await settle();
        await check();
        expect(storedRecords()).toBe(files.length);
        for (const change of changes) {
          mutate(files[change.file % files.length]!, change);
          // Right after the change (the index and the cache hold the old file) and once it settled.
          await check();
          await settle();
          await check();
        }
      }),
      { numRuns: 12 },
    );
  });

  it("serves getRecentSessions and listAll from the index too", async () => {
    for (let i = 0; i < 4; i++) fs.writeFileSync(path.join(dir, `s${i}.jsonl`), sessionText(`s${i}`, `title ${i}`, filler(5000)));
    await settle();
    await listAll(temp.path, { cache: false });
    expect(storedRecords()).toBe(4);
    const { storage, log } = countingStorage(new FileSessionStorage(temp.path));
    const all = await listAll(temp.path, { cache: false, storage });
    expect(all).toEqual(await listAll(temp.path, { cache: false, persistentIndex: false }));
    const recent = await getRecentSessions(dir, 2, storage, { cache: false });
    expect(recent.map((s) => s.title)).toEqual(all.sessions.slice(0, 2).map((s) => s.title));
    expect(log.prefixes).toEqual([]);
  });

  it("keeps non-ASCII text, escapes and lone surrogates exactly", async () => {
    const base = header({ id: "u", version: 5, cwd: "/wörk/ünï", timestamp: "2026-01-01T00:00:00.000Z" });
    // The assistant speaks first, so the first user message does not open allMessagesText.
    fs.writeFileSync(
      path.join(dir, "u.jsonl"),
      base + message("assistant", "Grüß dich 🎉") + message("user", 'héllo ✓ "quoted" back\\slash\nnew line') + headerPatch({ title: "Ünïcode 🎉" }),
    );
    fs.writeFileSync(
      path.join(dir, "lone.jsonl"),
      header({ id: "lone", version: 5, cwd: "/w" }) + '{"type":"header_patch","patch":{"title":"bad \\ud800 half"}}\n',
    );
    await settle();
    const expected = await fullRead();
    expect(expected.sessions.map((s) => s.id).sort()).toEqual(["lone", "u"]);
    expect(await listSessions(dir, { cache: false })).toEqual(expected);
    expect(storedRecords()).toBe(2);
    const { storage, log } = countingStorage(new FileSessionStorage(dir));
    expect(await listSessions(dir, { cache: false, storage })).toEqual(expected);
    expect(log.prefixes).toEqual([]);
  });

  it("does not remember a file changed just before the listing", async () => {
    fs.writeFileSync(path.join(dir, "old.jsonl"), sessionText("old", "old"));
    await settle();
    fs.writeFileSync(path.join(dir, "new.jsonl"), sessionText("new", "new"));
    await listSessions(dir, { cache: false });
    expect(storedIndex()?.has("new.jsonl")).toBe(false);
    expect(storedRecords()).toBe(1);
    await settle();
    await listSessions(dir, { cache: false });
    expect(storedRecords()).toBe(2);
  });
});

describe("an index that cannot be trusted", () => {
  async function indexed(): Promise<Buffer> {
    for (let i = 0; i < 3; i++) fs.writeFileSync(path.join(dir, `s${i}.jsonl`), sessionText(`s${i}`, `title ${i}`));
    await settle();
    await listSessions(dir, { cache: false });
    return fs.readFileSync(indexFile());
  }

  /** Lists with an instrumented storage: the listing, and how many session prefixes it read. */
  async function listCounting(storage: SessionStorage = new FileSessionStorage(dir)): Promise<{ listing: SessionListing; reads: number }> {
    const counted = countingStorage(storage);
    const listing = await listSessions(dir, { cache: false, storage: counted.storage });
    return { listing, reads: counted.log.prefixes.length };
  }

  async function expectIgnoredAndRebuilt(): Promise<void> {
    const { listing, reads } = await listCounting();
    expect(listing).toEqual(await fullRead());
    expect(reads).toBe(3);
    const stat = fs.lstatSync(indexFile());
    expect(stat.isFile()).toBe(true);
    expect(stat.mode & 0o7777).toBe(0o600);
    expect(stat.uid).toBe(process.geteuid!());
    expect(storedRecords()).toBe(3);
    expect((await listCounting()).reads).toBe(0);
  }

  it("is trusted when intact: no session file is read", async () => {
    await indexed();
    expect((await listCounting()).reads).toBe(0);
  });

  it("truncated, empty, not JSON, of another version, or with texts that fail their CRC", async () => {
    const bytes = await indexed();
    const text = bytes.toString("utf8");
    expect(text).toContain('"version":4');
    // One line: the texts are after the line break; the records (and the CRC) before it.
    const [records, texts] = text.split("\n") as [string, string];
    const damagedText = `${records}\n${texts.replace("hello s1", "hellO s1")}\n`;
    const oneLine = JSON.stringify(JSON.parse(text));
    for (const content of [text.slice(0, -5), "", "\u0000not json", text.replace('"version":4', '"version":3'), "[]", damagedText, oneLine]) {
      fs.writeFileSync(indexFile(), content, { mode: 0o600 });
      await expectIgnoredAndRebuilt();
    }
  });

  it("well-formed JSON whose records do not hold: ignored as a whole", async () => {
    const [first, texts] = (await indexed()).toString("utf8").split("\n") as [string, string];
    const index = JSON.parse(`${first}}`) as { fields: string[]; records: unknown[][] };
    // The records line as written: the object left open for the texts line.
    const write = (copy: typeof index): void => fs.writeFileSync(indexFile(), `${JSON.stringify(copy).slice(0, -1)}\n${texts}\n`, { mode: 0o600 });
    write(index);
    expect((await listCounting()).reads).toBe(0);
    const at = (field: string): number => index.fields.indexOf(field);
    const spoiled: ((record: unknown[]) => void)[] = [
      (record) => (record[at("dev")] = "-1"),
      (record) => (record[at("size")] = 1.5),
      (record) => (record[at("name")] = "../elsewhere.jsonl"),
      (record) => (record.length = at("skip") + 1),
      (record) => (record[at("skip")] = "empty"),
      (record) => (record[at("version")] = 0),
      (record) => (record[at("title")] = 7),
      // Text spans past the texts, not on a string literal, or reversed.
      (record) => (record[at("allEnd")] = texts.length + 10),
      (record) => (record[at("allEnd")] = (record[at("allStart")] as number) + 3),
      (record) => (record[at("firstEnd")] = (record[at("firstStart")] as number) - 1),
    ];
    for (const spoil of spoiled) {
      const copy = structuredClone(index);
      spoil(copy.records[1]!);
      write(copy);
      await expectIgnoredAndRebuilt();
    }
    // Fields in another order are another format.
    write({ ...index, fields: [...index.fields].reverse() });
    await expectIgnoredAndRebuilt();
    const duplicated = structuredClone(index);
    duplicated.records[2] = duplicated.records[1]!;
    write(duplicated);
    await expectIgnoredAndRebuilt();
  });

  it("readable by others (0644) or hard-linked", async () => {
    await indexed();
    fs.chmodSync(indexFile(), 0o644);
    await expectIgnoredAndRebuilt();
    fs.linkSync(indexFile(), path.join(temp.path, "second-link"));
    const { reads } = await listCounting();
    expect(reads).toBe(3);
  });

  it("larger than the bound", async () => {
    await indexed();
    // Sparse: the size is what is checked, before anything is read.
    fs.truncateSync(indexFile(), MAX_LISTING_INDEX_BYTES + 1);
    await expectIgnoredAndRebuilt();
  });

  it("owned by another user", async (ctx) => {
    if (!isRoot()) skipBecause(ctx, "only root can give a file to another user");
    await indexed();
    fs.chownSync(indexFile(), UNPRIVILEGED, UNPRIVILEGED);
    await expectIgnoredAndRebuilt();
  });

  it("a symbolic link: never followed, never written through", async () => {
    const bytes = await indexed();
    const elsewhere = path.join(temp.path, "planted-index");
    fs.writeFileSync(elsewhere, bytes, { mode: 0o600 });
    fs.rmSync(indexFile());
    fs.symlinkSync(elsewhere, indexFile());
    const { listing, reads } = await listCounting();
    expect(listing).toEqual(await fullRead());
    expect(reads).toBe(3);
    expect(fs.lstatSync(indexFile()).isSymbolicLink()).toBe(true);
    expect(fs.readFileSync(elsewhere).equals(bytes)).toBe(true);
  });

  it("in a managed directory: a loose mode is refused by the owner-only checks and replaced", async () => {
    const storage = ManagedSessionStorage.open(temp.path);
    try {
      for (let i = 0; i < 3; i++) fs.writeFileSync(path.join(dir, `s${i}.jsonl`), sessionText(`s${i}`, `title ${i}`), { mode: 0o600 });
      await settle();
      await listSessions(dir, { cache: false, storage });
      expect(fs.statSync(indexFile()).mode & 0o7777).toBe(0o600);
      expect((await listCounting(storage)).reads).toBe(0);
      fs.chmodSync(indexFile(), 0o640);
      const { listing, reads } = await listCounting(storage);
      expect(reads).toBe(3);
      expect(listing.sessions.map((s) => s.title)).toEqual((await fullRead()).sessions.map((s) => s.title));
      expect(fs.statSync(indexFile()).mode & 0o7777).toBe(0o600);
      expect((await listCounting(storage)).reads).toBe(0);
    } finally {
      storage.close();
    }
  });
});

describe("where the index is written", () => {
  it("never with persistentIndex: false, which does not read one either", async () => {
    fs.writeFileSync(path.join(dir, "a.jsonl"), sessionText("a", "a"));
    await settle();
    await listSessions(dir, { cache: false, persistentIndex: false });
    await listAll(temp.path, { cache: false, persistentIndex: false });
    await getRecentSessions(dir, 5, undefined, { cache: false, persistentIndex: false });
    expect(fs.existsSync(indexFile())).toBe(false);
    await listSessions(dir, { cache: false });
    const opened: string[] = [];
    const inner = new FileSessionStorage(dir);
    const storage = new Proxy(inner, {
      get(target, key) {
        if (key === "openReaderSync") {
          return (file: string) => {
            opened.push(path.basename(file));
            return target.openReaderSync(file);
          };
        }
        const value = Reflect.get(target, key, target) as unknown;
        return typeof value === "function" ? (value as (...args: unknown[]) => unknown).bind(target) : value;
      },
    });
    await listSessions(dir, { cache: false, persistentIndex: false, storage });
    expect(opened).toEqual(["a.jsonl"]);
  });

  it("not in a directory that others may enter or that is read-only, which still lists", async () => {
    fs.writeFileSync(path.join(dir, "a.jsonl"), sessionText("a", "a"));
    await settle();
    for (const mode of [0o755, 0o500]) {
      fs.chmodSync(dir, mode);
      const listing = await listSessions(dir, { cache: false });
      expect(listing).toEqual(await fullRead());
      expect(listing.sessions).toHaveLength(1);
      expect(fs.existsSync(indexFile())).toBe(false);
    }
    fs.chmodSync(dir, 0o700);
  });

  it("only when something changed", async () => {
    fs.writeFileSync(path.join(dir, "a.jsonl"), sessionText("a", "a"));
    fs.writeFileSync(path.join(dir, "b.jsonl"), sessionText("b", "b"));
    await settle();
    await listSessions(dir, { cache: false });
    const first = fs.statSync(indexFile(), { bigint: true });
    await listSessions(dir, { cache: false });
    await listSessions(dir, { cache: new SessionInfoCache() });
    expect(fs.statSync(indexFile(), { bigint: true }).ino).toBe(first.ino);
    fs.rmSync(path.join(dir, "b.jsonl"));
    await listSessions(dir, { cache: false });
    expect(fs.statSync(indexFile(), { bigint: true }).ino).not.toBe(first.ino);
    expect(storedRecords()).toBe(1);
  });

  it("as an unprivileged uid: written in its own 0700 directory, not in a read-only one", async (ctx) => {
    if (!isRoot()) skipBecause(ctx, "needs root to run a child as another uid");
    if (!hasCommand("setpriv")) skipBecause(ctx, "root, and setpriv (util-linux) is not installed");
    fs.chmodSync(temp.path, 0o755);
    const readOnly = path.join(temp.path, "read-only");
    fs.mkdirSync(readOnly);
    for (const at of [dir, readOnly]) {
      fs.writeFileSync(path.join(at, "a.jsonl"), sessionText("a", "mine"), { mode: 0o600 });
      fs.chownSync(path.join(at, "a.jsonl"), UNPRIVILEGED, UNPRIVILEGED);
      fs.chownSync(at, UNPRIVILEGED, UNPRIVILEGED);
    }
    fs.chmodSync(readOnly, 0o500);
    await settle();
    let child: BundledChild | undefined;
    try {
      child = await bundleManagerChild("list-index");
      const ids = [`--reuid=${UNPRIVILEGED}`, `--regid=${UNPRIVILEGED}`, "--clear-groups"];
      const run = async (at: string) => {
        const result = await runProcess("setpriv", [...ids, process.execPath, child!.file, at]);
        expect(result.status, result.stderr).toBe(0);
        return JSON.parse(result.stdout) as { titles: string[]; skipped: unknown[]; index: { uid: number; mode: number } | null };
      };
      const own = await run(dir);
      expect(own).toMatchObject({ titles: ["mine"], skipped: [], index: { uid: UNPRIVILEGED, mode: 0o600 } });
      expect(await run(dir)).toMatchObject({ titles: ["mine"], index: { uid: UNPRIVILEGED } });
      expect(await run(readOnly)).toEqual({ titles: ["mine"], skipped: [], index: null });
    } finally {
      child?.remove();
    }
  });
});

describe("the audit", () => {
  function indexFindings(f: AgentFixture): string[] | undefined {
    const rel = `${f.scopeRel}/${LISTING_INDEX_FILE_NAME}`;
    const found = auditAgentDir(f.agentDir).objects.find((object) => object.path === rel);
    return found?.findings.map((finding) => finding.code);
  }

  it("knows the index as an internal file, and still checks its mode", async () => {
    const f = makeAgentDir(temp.path, "index");
    const storage = ManagedSessionStorage.open(f.agentDir);
    try {
      await settle();
      const scopeDir = path.join(f.agentDir, f.scopeRel);
      await listSessions(scopeDir, { storage, cache: false });
      expect(fs.existsSync(indexFile(scopeDir))).toBe(true);
      expect(indexFindings(f) ?? []).toEqual([]);
      fs.chmodSync(indexFile(scopeDir), 0o644);
      expect(indexFindings(f)).toContain("mode_mismatch");
    } finally {
      storage.close();
    }
  });
});
