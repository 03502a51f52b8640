/**
 * The benchmark's switch (`lineIndexUpkeep` in src/manager/internal-hooks.ts) turns off only
 * the row upkeep of appends: with it off the sidecar stays as the open left it, and the next
 * open finds the lines appended meanwhile past what the index covers, loading what a full
 * parse loads. With it on, every appended line has its row once the manager closes.
 */
import fs from "node:fs";
import path from "node:path";

import { afterEach, beforeEach, describe, expect, it } from "vitest";

import { lineIndexUpkeep } from "../../src/manager/internal-hooks.js";
import { makeTempDir } from "../helpers/temp.js";
import { decodeLineIndex, fullParse, openReadOnly, openWritable, sidecarOf, snapshot } from "./line-index-helpers.js";

let tmp: { path: string; remove(): void };
let file: string;
beforeEach(() => {
  tmp = makeTempDir("gjc-line-index-upkeep-");
  file = path.join(tmp.path, "s.jsonl");
  const header = { type: "session", version: 5, id: "sess", timestamp: "2026-01-01T00:00:00.000Z", cwd: "/w" };
  const first = { type: "message", id: "e0", parentId: null, timestamp: "t", message: { role: "assistant", provider: "p", model: "m", content: [], timestamp: 0 } };
  fs.writeFileSync(file, `${JSON.stringify(header)}\n${JSON.stringify(first)}\n`, { mode: 0o600 });
});
afterEach(() => {
  lineIndexUpkeep.enabled = true;
  tmp.remove();
});

const rows = () => decodeLineIndex(fs.readFileSync(sidecarOf(file)))!.table.size;

async function appendAndClose(count: number): Promise<void> {
  const manager = await openWritable(file);
  for (let i = 0; i < count; i++) manager.appendMessage({ role: "user", content: `m${i}`, timestamp: i });
  await manager.close();
}

describe("line index upkeep switch", () => {
  it("keeps a row for every appended line when on (the default)", async () => {
    await appendAndClose(100);
    expect(rows()).toBe(102);
    expect(snapshot(await openReadOnly(file))).toEqual(await fullParse(file));
  });

  it("leaves the sidecar as the open wrote it when off, and the next open covers the new lines", async () => {
    lineIndexUpkeep.enabled = false;
    await appendAndClose(100);
    expect(rows()).toBe(2);
    lineIndexUpkeep.enabled = true;
    expect(snapshot(await openReadOnly(file))).toEqual(await fullParse(file));
    expect(rows()).toBe(102);
  });
});
