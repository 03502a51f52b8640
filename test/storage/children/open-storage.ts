/**
 * Opens the storage a child process was asked for (`file` or `managed`) at `root`.
 */
import { FileSessionStorage, ManagedSessionStorage, type SessionStorage, type StorageLogger } from "../../../src/storage/index.js";

/** A storage of `kind` rooted at `root` (created when missing). */
export function openStorage(kind: string, root: string, logger?: StorageLogger): SessionStorage {
  const options = logger === undefined ? {} : { logger };
  if (kind === "managed") return ManagedSessionStorage.open(root, { create: true, ...options });
  if (kind !== "file") throw new Error(`unknown storage kind ${kind}`);
  const storage = new FileSessionStorage(root, options);
  storage.ensureDirSync(root);
  return storage;
}
