/**
 * NdjsonFileWriter over sinks built on real descriptors: when syncs happen (and how many a
 * burst of flushes costs) and a sync that the kernel refuses (fsync on a pipe: EINVAL).
 */
import fs from "node:fs";
import path from "node:path";

import { afterEach, beforeEach, describe, expect, it } from "vitest";

import { NdjsonFileWriter, type LineSink, type WriteChunk } from "../../src/index.js";
import { run } from "../helpers/processes.js";
import { makeTempDir } from "../helpers/temp.js";
import { asyncCodeOf, recordingLogger } from "./storages.js";

/** Appends to a real descriptor and counts the syncs the writer asks for. */
class CountingSink implements LineSink {
  readonly path: string;
  readonly fd: number;
  syncs = 0;

  constructor(target: string, fd: number) {
    this.path = target;
    this.fd = fd;
  }

  appendSync(data: string): number {
    return fs.writeSync(this.fd, data);
  }

  lastByteSync(): number | undefined {
    return undefined;
  }

  syncSync(): void {
    this.syncs++;
    fs.fsyncSync(this.fd);
  }

  /** Appends instead of replacing: enough to see where later lines land. */
  async replace(chunks: Iterable<WriteChunk>): Promise<void> {
    await new Promise((resolve) => setTimeout(resolve, 5));
    for (const chunk of chunks) fs.writeSync(this.fd, Buffer.from(chunk));
  }

  closeSync(): void {
    fs.closeSync(this.fd);
  }
}

describe("NdjsonFileWriter", () => {
  let temp: ReturnType<typeof makeTempDir>;
  beforeEach(() => {
    temp = makeTempDir("gjc-writer-");
  });
  afterEach(() => temp.remove());

  it("syncs at once when idle, and shares one sync among flushes queued behind a rewrite", async () => {
    const file = path.join(temp.path, "group.jsonl");
    const sink = new CountingSink(file, fs.openSync(file, "a", 0o600));
    const writer = new NdjsonFileWriter(sink, recordingLogger());
    await writer.writeLine("0");
    const idle = writer.flush();
    expect(sink.syncs).toBe(1);
    await idle;
    const rewritten = writer.rewrite(["r\n"]);
    const queued: Promise<void>[] = [];
    for (let i = 1; i <= 5; i++) {
      queued.push(writer.writeLine(String(i)));
      queued.push(writer.flush());
    }
    // Nothing may be synced (or written) before the rewrite it queued behind.
    expect(sink.syncs).toBe(1);
    await rewritten;
    await Promise.all(queued);
    expect(sink.syncs).toBe(2);
    await writer.close();
    expect(fs.readFileSync(file, "utf8")).toBe("0\nr\n1\n2\n3\n4\n5\n");
  });

  it("returns each line's byte count, measured when a sink written before the count existed returns none", async () => {
    const file = path.join(temp.path, "count.jsonl");
    const counted = new NdjsonFileWriter(new CountingSink(file, fs.openSync(file, "a", 0o600)), recordingLogger());
    expect(counted.writeLineSync('{"n":"é"}')).toBe(10);
    await counted.close();
    const sink = new CountingSink(file, fs.openSync(file, "a", 0o600));
    const silent: LineSink = {
      path: file,
      appendSync: (data) => void sink.appendSync(data),
      lastByteSync: () => sink.lastByteSync(),
      syncSync: () => sink.syncSync(),
      replace: (chunks) => sink.replace(chunks),
      closeSync: () => sink.closeSync(),
    };
    const measured = new NdjsonFileWriter(silent, recordingLogger());
    expect(measured.writeLineSync('{"n":"€"}')).toBe(11);
    await measured.close();
    expect(fs.readFileSync(file, "utf8")).toBe('{"n":"é"}\n{"n":"€"}\n');
  });

  it("latches a sync the kernel refuses, logs it once, and refuses everything after", async () => {
    const [readEnd, writeEnd] = pipeFds();
    const logger = recordingLogger();
    const writer = new NdjsonFileWriter(new CountingSink("/pipe/session.jsonl", writeEnd), logger);
    await writer.writeLine('{"a":1}');
    const failure = await writer.flush().catch((error: unknown) => error);
    expect(failure).toMatchObject({ code: "write_failed", errno: "EINVAL", syscall: "fsync" });
    expect(writer.getError()).toBe(failure);
    for (const later of [
      () => writer.writeLine("{}"),
      () => writer.write({}),
      () => writer.flush(),
      () => writer.fsync(),
      () => writer.rewrite(["{}\n"]),
      () => writer.close(),
    ]) {
      expect(await later().catch((error: unknown) => error)).toBe(failure);
    }
    expect(logger.calls).toEqual([{ message: "Session persistence error.", path: "/pipe/session.jsonl", code: "write_failed" }]);
    // Nothing after the failure reached the descriptor.
    expect(fs.readFileSync(readEnd, "utf8")).toBe('{"a":1}\n');
    fs.closeSync(readEnd);
  });

  it("does not latch caller mistakes", async () => {
    const file = path.join(temp.path, "mistakes.jsonl");
    const logger = recordingLogger();
    const writer = new NdjsonFileWriter(new CountingSink(file, fs.openSync(file, "a", 0o600)), logger);
    expect(await asyncCodeOf(() => writer.writeLine("two\nlines"))).toBe("invalid_line");
    expect(await asyncCodeOf(() => writer.writeLine("two lines\n\n"))).toBe("invalid_line");
    expect(await asyncCodeOf(() => writer.write(() => 1))).toBe("invalid_line");
    await writer.writeLine("ok");
    await writer.close();
    expect(writer.getError()).toBeUndefined();
    expect(logger.calls).toEqual([]);
    expect(fs.readFileSync(file, "utf8")).toBe("ok\n");
  });

  it("takes a line already ending in its line feed (GJC's writers hand them so) as that one line", async () => {
    const file = path.join(temp.path, "terminated.jsonl");
    const writer = new NdjsonFileWriter(new CountingSink(file, fs.openSync(file, "a", 0o600)), recordingLogger());
    const record = JSON.stringify({ type: "message", id: "m1", text: "long tool output ".repeat(500) });
    expect(writer.writeLineSync(`${record}\n`)).toBe(Buffer.byteLength(record));
    await writer.writeLine(`${record}\n`);
    await writer.writeLine(record);
    await writer.close();
    expect(fs.readFileSync(file, "utf8")).toBe(`${record}\n${record}\n${record}\n`);
  });
});

/** A real pipe's two ends, via a FIFO opened without blocking. */
function pipeFds(): [number, number] {
  const dir = fs.mkdtempSync(path.join(fs.realpathSync("/tmp"), "gjc-pipe-"));
  const fifo = path.join(dir, "fifo");
  expect(run("mkfifo", [fifo]).status).toBe(0);
  const readEnd = fs.openSync(fifo, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK);
  const writeEnd = fs.openSync(fifo, fs.constants.O_WRONLY);
  fs.rmSync(dir, { recursive: true, force: true });
  return [readEnd, writeEnd];
}
