/**
 * The fixture of the import batch tests (SecureDir.importFilesAsync): unmanaged source
 * directories with planted entries, owner-only destinations closed after each test, the
 * exact-version requests the import checks, and the check that a copy is owner-only.
 */
import fs from "node:fs";
import path from "node:path";
import { afterAll, afterEach, beforeAll, expect } from "vitest";

import { SecureDir } from "../../src/index.js";
import { type ImportedFile, type ImportRequest } from "../../src/fs/index.js";
import { buildTools, type Tools } from "../helpers/processes.js";
import { makeTempDir } from "../helpers/temp.js";

/** What {@link useImportFixture} gives a test file. */
export interface ImportFixture {
  /** The temp directory of this test file. */
  readonly tmp: string;
  /** The compiled C helpers (fault shim). */
  readonly tools: Tools;
  /** A number no earlier call in this test file returned, for unique names. */
  unique(): number;
  /** A fresh unmanaged source directory (0755, as a peer tool leaves it); `fill` plants entries. */
  source(fill: (dir: string) => void): string;
  /** Writes entry `name` of `dir` with `content` and `mode`. */
  plant(dir: string, name: string, content: string | Buffer, mode?: number): void;
  /** A fresh owner-only destination, closed after the test. */
  destination(): SecureDir;
  /** Closes `dir` after the test. */
  hold(dir: SecureDir): void;
  /** The identity importFilesAsync checks its source directory against. */
  idOf(dir: string): { dev: bigint; ino: bigint };
  /** The request for entry `name` as it is now (not following a link); `change` alters it. */
  request(dir: string, name: string, change?: Partial<ImportRequest>): ImportRequest;
  /** Imports `requests` from `dir` into `dest`; fails the test where imports are unsupported. */
  importAll(dest: SecureDir, dir: string, requests: readonly ImportRequest[], buffer?: Buffer): Promise<ImportedFile[]>;
  /** A copy in `dest` is an owner-only single-link regular file of ours holding `bytes`. */
  expectOwnerOnlyCopy(dest: SecureDir, name: string, bytes: Buffer): void;
}

/** Registers the hooks of the calling test file and returns its fixture. */
export function useImportFixture(): ImportFixture {
  let tmp: ReturnType<typeof makeTempDir> | undefined;
  let tools: Tools | undefined;
  let n = 0;
  const held: SecureDir[] = [];
  beforeAll(() => {
    tmp = makeTempDir("gjc-import-");
    tools = buildTools();
  }, 120_000);
  afterEach(() => {
    for (const dir of held.splice(0)) if (!dir.closed) dir.close();
  });
  afterAll(() => tmp?.remove());
  const root = (): string => {
    if (tmp === undefined) throw new Error("the import fixture is used before its beforeAll ran");
    return tmp.path;
  };
  const idOf = (dir: string): { dev: bigint; ino: bigint } => {
    const st = fs.statSync(dir, { bigint: true });
    return { dev: st.dev, ino: st.ino };
  };
  return {
    get tmp() {
      return root();
    },
    get tools() {
      if (tools === undefined) throw new Error("the import fixture is used before its beforeAll ran");
      return tools;
    },
    unique: () => (n += 1),
    source(fill) {
      n += 1;
      const dir = path.join(root(), `source-${n}`);
      fs.mkdirSync(dir, { mode: 0o755 });
      fs.chmodSync(dir, 0o755);
      fill(dir);
      return dir;
    },
    plant(dir, name, content, mode = 0o644) {
      fs.writeFileSync(path.join(dir, name), content);
      fs.chmodSync(path.join(dir, name), mode);
    },
    destination() {
      n += 1;
      const dir = SecureDir.openRoot(path.join(root(), `dest-${n}`), { create: true });
      held.push(dir);
      return dir;
    },
    hold(dir) {
      held.push(dir);
    },
    idOf,
    request(dir, name, change = {}) {
      const st = fs.lstatSync(path.join(dir, name), { bigint: true });
      return { name, dev: st.dev, ino: st.ino, size: Number(st.size), mtimeNs: st.mtimeNs, ctimeNs: st.ctimeNs, ...change };
    },
    async importAll(dest, dir, requests, buffer = Buffer.alloc(1 << 20)) {
      const result = await dest.importFilesAsync(dir, idOf(dir), requests, buffer);
      if (result === "unsupported") throw new Error("import batches are POSIX-only; this suite runs on Linux");
      return result;
    },
    expectOwnerOnlyCopy(dest, name, bytes) {
      const p = path.join(dest.path, name);
      const st = fs.lstatSync(p);
      expect(st.isFile(), name).toBe(true);
      expect(st.mode & 0o7777, name).toBe(0o600);
      expect(st.uid, name).toBe(process.geteuid?.());
      expect(st.nlink, name).toBe(1);
      expect(fs.readFileSync(p).equals(bytes), name).toBe(true);
      // openFile reads the ACL attributes too: it refuses a copy that kept any.
      const file = dest.openFile(name);
      expect(file.verify().accessAcl).toBe("absent");
      file.close();
    },
  };
}

/** The outcome of each imported file, in request order. */
export const outcomes = (files: readonly ImportedFile[]): ImportedFile["outcome"][] => files.map((f) => f.outcome);
