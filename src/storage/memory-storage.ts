/**
 * A map-backed {@link SessionStorage}: the storage of in-memory sessions, and the cheapest way
 * to exercise code written against the contract. It keeps the disk rules (parents must exist,
 * files and directories do not mix, one writer per file), so what holds here holds on disk.
 */

import path from "node:path";

import { SyncBackedStorage } from "./sync-backed.js";
import { positionalReader, batchChunks, type PositionalRead } from "./bytes.js";
import { StorageError, pathError } from "./errors.js";
import { NdjsonFileWriter, consoleStorageLogger } from "./ndjson-writer.js";
import { isPlainEntryName, normalizeRoot, splitBelowRoot, splitFilePath } from "./paths.js";
import type { LineSink, ReplaceOptions, SessionFileReader, SessionStorage, SessionStorageWriter, StorageLogger, StorageStat, WriteChunk } from "./types.js";

interface MemoryFile {
  kind: "file";
  ino: number;
  mtimeMs: number;
  /** Appended pieces; joined lazily on read so that appends stay O(line). */
  parts: Buffer[];
  size: number;
}

interface MemoryDirectory {
  kind: "directory";
  ino: number;
  mtimeMs: number;
}

type MemoryNode = MemoryFile | MemoryDirectory;

/** Options of {@link MemorySessionStorage}. */
export interface MemorySessionStorageOptions {
  /** The absolute path every stored path lies below; default `/`. It exists from the start. */
  root?: string;
  /** Receives a writer's first failure. */
  logger?: StorageLogger;
}

/** {@link SessionStorage} kept in a map; see the module comment. */
export class MemorySessionStorage extends SyncBackedStorage implements SessionStorage {
  /** {@inheritDoc SessionStorage.root} */
  readonly root: string;
  readonly #nodes = new Map<string, MemoryNode>();
  readonly #locked = new Set<string>();
  readonly #logger: StorageLogger;
  #nextIno = 1;

  constructor(options: MemorySessionStorageOptions = {}) {
    super();
    this.root = normalizeRoot(options.root ?? "/");
    this.#logger = options.logger ?? consoleStorageLogger;
    this.#nodes.set(this.root, { kind: "directory", ino: this.#nextIno++, mtimeMs: Date.now() });
  }

  /** {@inheritDoc SessionStorage.ensureDirSync} */
  ensureDirSync(dir: string): void {
    let current = this.root;
    for (const name of splitBelowRoot(this.root, dir).names) {
      current = path.join(current, name);
      const node = this.#nodes.get(current);
      if (node === undefined) this.#nodes.set(current, { kind: "directory", ino: this.#nextIno++, mtimeMs: Date.now() });
      else if (node.kind !== "directory") throw pathError("not_directory", current);
    }
  }

  /** {@inheritDoc SessionStorage.writeTextSync} */
  writeTextSync(target: string, data: WriteChunk, options: ReplaceOptions = {}): void {
    const { absolute } = splitFilePath(this.root, target);
    this.#checkDestination(absolute, options);
    this.#nodes.set(absolute, this.#fileFrom([data]));
  }

  /** {@inheritDoc SessionStorage.statSync} */
  statSync(target: string): StorageStat {
    return this.#stat(target);
  }

  /** {@inheritDoc SessionStorage.listFilesSync} */
  listFilesSync(dir: string, options: { kind?: "file" | "directory" } = {}): string[] {
    const kind = options.kind ?? "file";
    const absolute = this.#directory(splitBelowRoot(this.root, dir).absolute);
    const names: string[] = [];
    for (const [key, child] of this.#nodes) {
      if (child.kind !== kind || key === absolute || path.dirname(key) !== absolute) continue;
      const name = path.basename(key);
      // Hidden names are temporaries and lock files on disk; listings skip them everywhere.
      if (!name.startsWith(".")) names.push(name);
    }
    return names.sort();
  }

  /** {@inheritDoc SessionStorage.statEntriesSync} */
  statEntriesSync(dir: string, names: readonly string[]): (StorageStat | StorageError)[] {
    const absolute = this.#directory(splitBelowRoot(this.root, dir).absolute);
    return names.map((name) => {
      if (!isPlainEntryName(name)) return pathError("invalid_path", path.join(absolute, name));
      try {
        return this.#stat(path.join(absolute, name));
      } catch (error) {
        if (error instanceof StorageError) return error;
        throw error;
      }
    });
  }

  /** {@inheritDoc SessionStorage.openReaderSync} */
  openReaderSync(target: string): SessionFileReader {
    const { absolute } = splitFilePath(this.root, target);
    const file = this.#file(absolute);
    // Like a descriptor, the reader follows the object it opened: appends to it are seen,
    // a replacement published at the same name is not.
    const read: PositionalRead = (into, offset, length, at) => {
      const data = contents(file);
      return at >= data.length ? 0 : data.copy(into, offset, at, Math.min(at + length, data.length));
    };
    return positionalReader(absolute, this.#stat(absolute), read, () => undefined);
  }

  /** {@inheritDoc SessionStorage.renameSync} */
  renameSync(from: string, to: string, options: ReplaceOptions = {}): void {
    const source = splitFilePath(this.root, from).absolute;
    const node = this.#file(source);
    const destination = splitFilePath(this.root, to).absolute;
    this.#checkDestination(destination, options);
    if (this.#locked.has(source)) throw pathError("session_busy", source);
    if (source === destination) return;
    this.#nodes.delete(source);
    this.#nodes.set(destination, node);
  }

  /** {@inheritDoc SessionStorage.unlink} */
  async unlink(target: string): Promise<void> {
    this.unlinkSync(target);
  }

  /** {@link unlink} done synchronously. */
  unlinkSync(target: string): void {
    const { absolute } = splitFilePath(this.root, target);
    this.#file(absolute);
    if (this.#locked.has(absolute)) throw pathError("session_busy", absolute);
    this.#nodes.delete(absolute);
  }

  /**
   * Removes directory `dir` and everything below it, as a recursive delete on disk would; `session_busy` (nothing removed)
   * while a writer holds a file below it.
   * @throws StorageError `not_found`, `not_directory`, `invalid_path` (the root), `session_busy`
   */
  removeTreeSync(dir: string): void {
    const { absolute } = splitFilePath(this.root, dir);
    this.#directory(absolute);
    const below = `${absolute}${path.sep}`;
    const doomed = [...this.#nodes.keys()].filter((key) => key === absolute || key.startsWith(below));
    const held = doomed.find((key) => this.#locked.has(key));
    if (held !== undefined) throw pathError("session_busy", held);
    for (const key of doomed) this.#nodes.delete(key);
  }

  /** {@inheritDoc SessionStorage.openWriter} */
  openWriter(target: string): SessionStorageWriter {
    const { absolute } = splitFilePath(this.root, target);
    this.#checkDestination(absolute, {});
    if (this.#locked.has(absolute)) throw pathError("session_busy", absolute);
    this.#locked.add(absolute);
    let file = this.#nodes.get(absolute) as MemoryFile | undefined;
    if (file === undefined) {
      file = this.#fileFrom([]);
      this.#nodes.set(absolute, file);
    }
    let closed = false;
    // Like a descriptor, the sink follows the file it opened, not the name.
    const open = (): MemoryFile => {
      if (closed) throw pathError("writer_closed", absolute);
      return file as MemoryFile;
    };
    const sink: LineSink = {
      path: absolute,
      appendSync(data) {
        const into = open();
        const bytes = Buffer.from(data, "utf8");
        into.parts.push(bytes);
        into.size += bytes.length;
        into.mtimeMs = Date.now();
        return bytes.length;
      },
      lastByteSync() {
        const last = open().parts.at(-1);
        return last === undefined || last.length === 0 ? undefined : last[last.length - 1];
      },
      syncSync: () => void open(),
      replace: async (chunks) => {
        open();
        file = this.#fileFrom(chunks);
        this.#directory(path.dirname(absolute));
        this.#nodes.set(absolute, file);
      },
      closeSync: () => {
        if (!closed) this.#locked.delete(absolute);
        closed = true;
      },
    };
    return new NdjsonFileWriter(sink, this.#logger);
  }

  /** Refuses a file destination that is a directory, or exists under `noReplace`; its parent must be a directory. */
  #checkDestination(absolute: string, options: ReplaceOptions): void {
    this.#directory(path.dirname(absolute));
    const existing = this.#nodes.get(absolute);
    if (existing?.kind === "directory") throw pathError("not_regular_file", absolute);
    if (existing !== undefined && options.noReplace === true) throw pathError("already_exists", absolute);
  }

  /**
   * What `statSync` reports, for the listing and the readers without going through it: a subclass may report stats in
   * another shape (the /gjc face reports GJC's), and these two hand theirs to the engine.
   */
  #stat(target: string): StorageStat {
    const node = this.#existing(splitBelowRoot(this.root, target).absolute);
    return { kind: node.kind, size: node.kind === "file" ? node.size : 0, mtimeMs: node.mtimeMs, dev: "0", ino: String(node.ino) };
  }

  /** The node at `absolute`, its parents walked outermost first as a disk lookup would. */
  #existing(absolute: string): MemoryNode {
    for (let end = this.root.length; (end = absolute.indexOf(path.sep, end + 1)) !== -1;) {
      const parent = this.#nodes.get(absolute.slice(0, end));
      if (parent === undefined) break;
      if (parent.kind !== "directory") throw pathError("not_directory", absolute.slice(0, end));
    }
    const node = this.#nodes.get(absolute);
    if (node === undefined) throw pathError("not_found", absolute);
    return node;
  }

  #file(absolute: string): MemoryFile {
    const node = this.#existing(absolute);
    if (node.kind !== "file") throw pathError("not_regular_file", absolute);
    return node;
  }

  /** Returns `absolute` after checking that a directory is there. */
  #directory(absolute: string): string {
    if (this.#existing(absolute).kind !== "directory") throw pathError("not_directory", absolute);
    return absolute;
  }

  #fileFrom(chunks: Iterable<WriteChunk>): MemoryFile {
    const file: MemoryFile = { kind: "file", ino: this.#nextIno++, mtimeMs: Date.now(), parts: [], size: 0 };
    for (const batch of batchChunks(chunks)) {
      file.parts.push(batch);
      file.size += batch.length;
    }
    return file;
  }
}

/** Joins a file's parts into one buffer and keeps it, so repeated reads stay cheap. */
function contents(file: MemoryFile): Buffer {
  if (file.parts.length !== 1) file.parts = [Buffer.concat(file.parts, file.size)];
  return file.parts[0] as Buffer;
}
