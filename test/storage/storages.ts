/**
 * Fixtures for the storage tests: one factory per implementation, and assertions on
 * StorageError codes (tests assert codes, never messages).
 */
import path from "node:path";

import {
  FileSessionStorage,
  ManagedSessionStorage,
  MemorySessionStorage,
  StorageError,
  type SessionStorage,
  type StorageErrorCode,
  type StorageLogger,
} from "../../src/index.js";
import { makeTempDir } from "../helpers/temp.js";

/** The three implementations of the contract. */
export const STORAGE_KINDS = ["memory", "file", "managed"] as const;
export type StorageKind = (typeof STORAGE_KINDS)[number];

/** A storage under test with its root and a cleanup. */
export interface StorageFixture {
  kind: StorageKind;
  storage: SessionStorage;
  root: string;
  cleanup(): void;
}

/** A logger that records what it is given. */
export function recordingLogger(): StorageLogger & { calls: { message: string; path: string; code: string }[] } {
  const calls: { message: string; path: string; code: string }[] = [];
  return {
    calls,
    error(message, details) {
      calls.push({ message, path: details.path, code: details.code });
    },
  };
}

/** A fresh, empty storage of `kind` whose root exists. */
export function makeStorage(kind: StorageKind, logger: StorageLogger = recordingLogger()): StorageFixture {
  if (kind === "memory") {
    const root = "/memory/store";
    return { kind, storage: new MemorySessionStorage({ root, logger }), root, cleanup() {} };
  }
  const temp = makeTempDir("gjc-storage-");
  const root = path.join(temp.path, "store");
  if (kind === "file") {
    const storage = new FileSessionStorage(root, { logger });
    storage.ensureDirSync(root);
    return { kind, storage, root, cleanup: () => temp.remove() };
  }
  const storage = ManagedSessionStorage.open(root, { create: true, logger });
  return {
    kind,
    storage,
    root,
    cleanup() {
      storage.close();
      temp.remove();
    },
  };
}

/** The StorageError code `fn` throws, or undefined when it returns normally. */
export function codeOf(fn: () => unknown): StorageErrorCode | undefined {
  try {
    fn();
  } catch (error) {
    if (error instanceof StorageError) return error.code;
    throw error;
  }
  return undefined;
}

/** The StorageError code an async operation rejects with, or undefined when it resolves. */
export async function asyncCodeOf(fn: () => Promise<unknown>): Promise<StorageErrorCode | undefined> {
  try {
    await fn();
  } catch (error) {
    if (error instanceof StorageError) return error.code;
    throw error;
  }
  return undefined;
}
