/** The storage layer: the `SessionStorage` contract, its three implementations, the shared writer and the blob store. */
export { StorageError, isStorageError, STORAGE_ERROR_CODES } from "./errors.js";
export type { StorageErrorCode } from "./errors.js";
export type {
  LineSink,
  ReplaceOptions,
  SessionFileReader,
  SessionStorage,
  SessionStorageWriter,
  SidecarFile,
  SidecarOpenOptions,
  StorageLogger,
  StorageStat,
  WriteChunk,
  WriterCloseState,
  WriterOpenOptions,
} from "./types.js";
export { NdjsonFileWriter, consoleStorageLogger } from "./ndjson-writer.js";
export { FileSessionStorage, isTrustedSidecar } from "./file-storage.js";
export type { FileSessionStorageOptions } from "./file-storage.js";
export { ManagedSessionStorage } from "./managed-storage.js";
export type { ManagedSessionStorageOptions } from "./managed-storage.js";
export { MemorySessionStorage } from "./memory-storage.js";
export type { MemorySessionStorageOptions } from "./memory-storage.js";
export { BlobStore, moveAsideCommand } from "./blob-store.js";
export { isBlobRef } from "../session/blob-refs.js";
export type { BlobPutResult } from "./blob-store.js";
export { decodeUtf8Prefix } from "./bytes.js";
