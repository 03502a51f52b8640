/**
 * walOwnerStamp reads a WAL as SQLite's recovery does: the stamp of the newest page 1 in a committed transaction whose
 * frames carry the header's salts and a valid running checksum. Real WALs written by SQLite, then cut or damaged.
 */
import fs from "node:fs";
import path from "node:path";

import { afterEach, beforeEach, describe, expect, it } from "vitest";

import { SecureDir } from "../../src/index.js";
import { walOwnerStamp } from "../../src/history/wal-owner.js";
import { makeTempDir } from "../helpers/temp.js";
import { rawDb } from "./helpers.js";

let tmp: ReturnType<typeof makeTempDir>;
let dir: SecureDir;

beforeEach(() => {
  tmp = makeTempDir("gjc-wal-owner-");
  dir = SecureDir.openRoot(path.join(tmp.path, "copies"), { create: true });
});
afterEach(() => {
  dir.close();
  tmp.remove();
});

/** The WAL bytes after one transaction per stamp (each also changes a row), taken while the connection is open. */
function walAfter(stamps: readonly number[]): Buffer {
  const file = path.join(tmp.path, `db-${stamps.join("-")}.db`);
  const db = rawDb(file, { create: true });
  try {
    db.exec("PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0; CREATE TABLE t(x TEXT)");
    for (const stamp of stamps) db.exec(`BEGIN IMMEDIATE; PRAGMA application_id = ${stamp}; INSERT INTO t VALUES ('${"row ".repeat(200)}'); COMMIT`);
    return fs.readFileSync(`${file}-wal`);
  } finally {
    db.close();
  }
}

function ownerOf(bytes: Buffer): number | undefined {
  const name = `wal-${Math.random().toString(36).slice(2)}`;
  fs.writeFileSync(path.join(dir.path, name), bytes, { mode: 0o600 });
  const file = dir.openFile(name);
  try {
    return walOwnerStamp(file);
  } finally {
    file.close();
  }
}

describe("walOwnerStamp", () => {
  it("names the stamp of the newest committed page 1, and nothing for an unstamped one or no frame", () => {
    expect(ownerOf(walAfter([111, 222]))).toBe(222);
    expect(ownerOf(walAfter([-5]))).toBe(-5);
    // A writer that leaves application_id at 0 does not stamp: nothing says whose the frames are.
    expect(ownerOf(walAfter([111, 0]))).toBeUndefined();
    expect(ownerOf(Buffer.alloc(0))).toBeUndefined();
    expect(ownerOf(walAfter([111]).subarray(0, 32))).toBeUndefined();
  });

  it("stops where recovery stops: a torn or damaged last transaction leaves the one before it", () => {
    const wal = walAfter([111, 222]);
    expect(ownerOf(wal.subarray(0, wal.length - 1))).toBe(111);
    const damaged = Buffer.from(wal);
    damaged[damaged.length - 100] = (damaged[damaged.length - 100] as number) ^ 0xff;
    expect(ownerOf(damaged)).toBe(111);
    // Another salt in the header (a WAL restarted since): no frame is this header's, and the header checksum fails.
    const resalted = Buffer.from(wal);
    resalted.writeUInt32BE((resalted.readUInt32BE(16) ^ 1) >>> 0, 16);
    expect(ownerOf(resalted)).toBeUndefined();
    expect(ownerOf(Buffer.concat([Buffer.from("not a wal header at all, 32 bytes"), wal.subarray(32)]))).toBeUndefined();
  });
});
