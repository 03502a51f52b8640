/**
 * One error family for the three storages: every contract method, given the same bad input,
 * fails with a StorageError of the same code in memory, on an explicit directory and on a
 * managed root (or, where the input is fine, succeeds in all three).
 */
import path from "node:path";

import { afterEach, beforeEach, describe, expect, it } from "vitest";

import { StorageError, type SessionStorage } from "../../src/index.js";
import { STORAGE_KINDS, makeStorage, type StorageFixture } from "./storages.js";

/** "ok", or the code of the StorageError `run` threw or rejected with; any other error fails the test. */
async function outcome(run: () => unknown): Promise<string> {
  try {
    const value = await run();
    // A writer opened by a case that was expected to fail must not hold its lock for the next one.
    (value as { closeSync?: () => void } | undefined)?.closeSync?.();
    return "ok";
  } catch (error) {
    if (error instanceof StorageError) return error.code;
    throw error;
  }
}

type Operation = (storage: SessionStorage, target: string, elsewhere: string) => unknown;

/** Every contract method that takes a file path. */
const FILE_OPERATIONS: Record<string, Operation> = {
  existsSync: (s, p) => s.existsSync(p),
  exists: (s, p) => s.exists(p),
  statSync: (s, p) => s.statSync(p),
  openReaderSync: (s, p) => s.openReaderSync(p).close(),
  readText: (s, p) => s.readText(p),
  readTextPrefix: (s, p) => s.readTextPrefix(p, 16),
  writeTextSync: (s, p) => s.writeTextSync(p, "x"),
  writeText: (s, p) => s.writeText(p, "x"),
  rename: (s, p, to) => s.rename(p, to),
  renameSync: (s, p, to) => s.renameSync(p, to),
  renameInto: (s, p, to) => s.rename(to, p),
  unlink: (s, p) => s.unlink(p),
  openWriter: (s, p) => s.openWriter(p),
};

/** Every contract method that takes a directory path. */
const DIRECTORY_OPERATIONS: Record<string, Operation> = {
  ensureDirSync: (s, p) => s.ensureDirSync(p),
  listFilesSync: (s, p) => s.listFilesSync(p),
  listDirectories: (s, p) => s.listFilesSync(p, { kind: "directory" }),
  statEntriesSync: (s, p) => s.statEntriesSync(p, ["a"]),
};

/** What each file operation gives for a target in each state (a code, or "ok"). */
const FILE_EXPECTED: Record<string, Record<string, string>> = {
  relative: allOf(FILE_OPERATIONS, "invalid_path"),
  outsideRoot: allOf(FILE_OPERATIONS, "outside_root"),
  root: {
    ...allOf(FILE_OPERATIONS, "invalid_path"),
    existsSync: "ok",
    exists: "ok",
    statSync: "ok",
  },
  missingParent: { ...allOf(FILE_OPERATIONS, "not_found"), existsSync: "ok", exists: "ok" },
  fileAsParent: allOf(FILE_OPERATIONS, "not_directory"),
  missing: {
    ...allOf(FILE_OPERATIONS, "not_found"),
    existsSync: "ok",
    exists: "ok",
    renameInto: "ok",
    writeTextSync: "ok",
    writeText: "ok",
    openWriter: "ok",
  },
  directory: {
    ...allOf(FILE_OPERATIONS, "not_regular_file"),
    existsSync: "ok",
    exists: "ok",
    statSync: "ok",
  },
  lockedFile: {
    ...allOf(FILE_OPERATIONS, "ok"),
    rename: "session_busy",
    renameSync: "session_busy",
    unlink: "session_busy",
    openWriter: "session_busy",
  },
};

const DIRECTORY_EXPECTED: Record<string, Record<string, string>> = {
  relative: allOf(DIRECTORY_OPERATIONS, "invalid_path"),
  outsideRoot: allOf(DIRECTORY_OPERATIONS, "outside_root"),
  missing: { ...allOf(DIRECTORY_OPERATIONS, "not_found"), ensureDirSync: "ok" },
  file: allOf(DIRECTORY_OPERATIONS, "not_directory"),
};

function allOf(operations: Record<string, Operation>, result: string): Record<string, string> {
  return Object.fromEntries(Object.keys(operations).map((name) => [name, result]));
}

describe.each(STORAGE_KINDS)("SessionStorage error codes: %s", (kind) => {
  let fixture: StorageFixture;
  let storage: SessionStorage;
  let root: string;
  /** The directory of the current case: each case gets a fresh one, so none sees what another changed. */
  let base: string;
  let cases = 0;
  const at = (...names: string[]) => path.join(base, ...names);

  beforeEach(() => {
    fixture = makeStorage(kind);
    storage = fixture.storage;
    root = fixture.root;
  });
  afterEach(() => fixture.cleanup());

  async function prepare(): Promise<void> {
    base = path.join(root, `case-${cases++}`);
    storage.ensureDirSync(at("dir"));
    await storage.writeText(at("plain"), "p");
    await storage.writeText(at("locked.jsonl"), "l\n");
    await storage.writeText(at("source.jsonl"), "s\n");
  }

  const FILE_TARGETS: Record<string, () => string> = {
    relative: () => "relative/file",
    outsideRoot: () => path.join(path.dirname(root), "elsewhere", "file"),
    root: () => root,
    missingParent: () => at("no-dir", "file"),
    fileAsParent: () => at("plain", "file"),
    missing: () => at("missing"),
    directory: () => at("dir"),
    lockedFile: () => at("locked.jsonl"),
  };

  it("are the same for every file operation", async () => {
    const seen: Record<string, Record<string, string>> = {};
    // How the live writer's close went after each operation that succeeded on its file.
    const closes: Record<string, string> = {};
    for (const [state, target] of Object.entries(FILE_TARGETS)) {
      seen[state] = {};
      // The lock of a live writer, for the locked-file case; every other target is left unlocked.
      const lock = async () => {
        await prepare();
        return state === "lockedFile" ? storage.openWriter(at("locked.jsonl")) : undefined;
      };
      let writer = await lock();
      for (const [name, run] of Object.entries(FILE_OPERATIONS)) {
        const other = name === "renameInto" ? at("source.jsonl") : at("renamed.jsonl");
        seen[state][name] = await outcome(() => run(storage, target(), other));
        // A failure changes nothing; a success may have, so the next operation gets a fresh tree.
        if (seen[state][name] === "ok") {
          const open = writer;
          if (open !== undefined) closes[name] = await outcome(() => open.closeSync());
          writer = await lock();
        }
      }
      writer?.closeSync();
    }
    expect(seen).toEqual(FILE_EXPECTED);
    // A file replaced under its writer: the close reports that the writer's lines are not at the name (memory has no
    // other process to replace one behind the storage's back, and its writer follows the file it opened).
    const replaced = kind === "memory" ? "ok" : "unsafe_entry";
    expect(closes).toEqual({
      ...allOf(FILE_OPERATIONS, "ok"),
      writeTextSync: replaced,
      writeText: replaced,
      renameInto: replaced,
      rename: undefined,
      renameSync: undefined,
      unlink: undefined,
      openWriter: undefined,
    });
  });

  it("are the same for every directory operation", async () => {
    const targets: Record<string, () => string> = {
      relative: () => "relative/dir",
      outsideRoot: () => path.join(path.dirname(root), "elsewhere"),
      missing: () => at("no-dir", "sub"),
      file: () => at("plain"),
    };
    const seen: Record<string, Record<string, string>> = {};
    for (const [state, target] of Object.entries(targets)) {
      seen[state] = {};
      await prepare();
      for (const [name, run] of Object.entries(DIRECTORY_OPERATIONS)) {
        seen[state][name] = await outcome(() => run(storage, target(), ""));
        if (seen[state][name] === "ok") await prepare();
      }
    }
    expect(seen).toEqual(DIRECTORY_EXPECTED);
  });
});
