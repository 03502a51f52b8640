/**
 * Two readers of one storage object want two shapes of a stat. GJC's app and tests call the face's storages as GJC's
 * (`statSync` gives device and inode as bigints, nanosecond times, `isFile`); the engine below the face reads the main
 * entry's (`kind`, device and inode as decimal strings). The face's storages answer GJC's way, and every storage a
 * caller hands the face reaches the engine through {@link engineStorage}: the same object, whose `statSync` answers
 * the engine's way (the other direction is `gjcStatOf`, in ./storage-types.ts).
 */
import type { SessionFileReader, SessionStorage, StorageStat } from "../storage/index.js";
import { MemorySessionStorage as EngineMemoryStorage, FileSessionStorage as EngineFileStorage } from "../storage/index.js";
import { GJC_STAT_SHAPE, type SessionStorageStat } from "./storage-types.js";

/** A storage as a caller may hand it to the face: the main entry's, or one of the face's (GJC's stat shape). */
export type FaceSessionStorage = SessionStorage | GjcShapedStorage;

/** A storage whose `statSync` answers in GJC's shape; every other call is the main entry's. */
export type GjcShapedStorage = Omit<SessionStorage, "statSync"> & { statSync(path: string): SessionStorageStat };

/**
 * What the engine reads of a stat GJC's way: identity, size and modification time from `gjc` (what a subclass
 * reports, as GJC's tests script it), kind and change time from the storage's own stat `own` (GJC's shape tells a
 * directory from nothing else; the engine's memory storage keeps no change time).
 */
function engineStatOf(gjc: SessionStorageStat, own: StorageStat): StorageStat {
  return {
    kind: gjc.isFile ? "file" : own.kind === "file" ? "other" : own.kind,
    size: gjc.size,
    mtimeMs: gjc.mtimeMs,
    dev: gjc.dev.toString(),
    ino: gjc.ino.toString(),
    ...(own.ctimeMs === undefined ? {} : { ctimeMs: own.ctimeMs }),
  };
}

/** Whether `storage` is one of the face's storages (or a subclass), whose stats are in GJC's shape. */
function gjcShaped(storage: FaceSessionStorage): storage is GjcShapedStorage & (EngineMemoryStorage | EngineFileStorage) {
  return GJC_STAT_SHAPE in storage && (storage instanceof EngineMemoryStorage || storage instanceof EngineFileStorage);
}

const views = new WeakMap<object, SessionStorage>();

/**
 * `storage` as the engine reads it: itself when it is the main entry's; one of the face's behind a view (one per
 * storage, so the engine sees the same object each time) whose `statSync` answers the engine's way and whose other
 * calls are the storage's own, subclass overrides included.
 */
export function engineStorage(storage: FaceSessionStorage): SessionStorage;
export function engineStorage(storage: FaceSessionStorage | undefined): SessionStorage | undefined;
export function engineStorage(storage: FaceSessionStorage | undefined): SessionStorage | undefined {
  if (storage === undefined || !gjcShaped(storage)) return storage as SessionStorage | undefined;
  let view = views.get(storage);
  if (view === undefined) {
    const own = (storage instanceof EngineFileStorage ? EngineFileStorage.prototype : EngineMemoryStorage.prototype).statSync;
    const bound = new WeakMap<object, unknown>();
    const statSync = (target: string): StorageStat => engineStatOf(storage.statSync(target), own.call(storage, target));
    // A map has no descriptors: what a reader of one reports is the stat of its file at the open, so it agrees with what
    // `statSync` reports then (a file storage's reader keeps its descriptor's stat).
    const openReaderSync = (target: string): SessionFileReader => {
      const reader = storage.openReaderSync(target);
      return { ...reader, stat: engineStatOf(storage.statSync(target), reader.stat) };
    };
    const inMemory = storage instanceof EngineMemoryStorage;
    view = new Proxy(storage as unknown as SessionStorage, {
      get(target, key) {
        if (key === "statSync") return statSync;
        if (key === "openReaderSync" && inMemory) return openReaderSync;
        const value: unknown = Reflect.get(target, key, target);
        if (typeof value !== "function") return value;
        // Bound to the storage itself: its methods reach its private state, which the view does not carry.
        let method = bound.get(value);
        if (method === undefined) bound.set(value, (method = (value as (...args: unknown[]) => unknown).bind(target)));
        return method;
      },
    });
    views.set(storage, view);
  }
  return view;
}
