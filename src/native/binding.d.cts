// Types for the compiled addon (native/binding/addon.cc), one entry per exported function.
// Every function returns its value or a NativeFailure record; none throws.

declare namespace binding {
  /** Reason codes the addon reports (native/core/result.h `code_name`). */
  type NativeFailureCode =
    | "invalid_name"
    | "invalid_argument"
    | "not_found"
    | "already_exists"
    | "symlink_refused"
    | "not_directory"
    | "not_regular_file"
    | "hardlink_refused"
    | "owner_mismatch"
    | "mode_mismatch"
    | "acl_present"
    | "acl_malformed"
    | "acl_denied"
    | "acl_io_error"
    | "acl_unknown"
    | "identity_mismatch"
    | "permission_denied"
    | "lock_busy"
    | "not_utf8"
    | "network_unsupported"
    | "insecure_ancestor"
    | "identity_unavailable"
    | "too_large"
    | "closed"
    | "io_error";

  /** A failed call: the reason, the C errno behind it (0 for policy failures) and the syscall. */
  interface NativeFailure {
    readonly failed: true;
    readonly code: NativeFailureCode;
    readonly errno: number;
    readonly syscall: string;
    readonly attribute?: "access_acl" | "default_acl";
  }

  /** An open descriptor owned by the addon; JS never sees the number. */
  interface NativeHandle {
    readonly __nativeHandle: never;
    isOpen(): boolean;
  }

  /** A SHA-256 in progress, owned by the addon (native/binding/digest.h). */
  interface NativeDigest {
    readonly __nativeDigest: never;
  }

  type AclEvidence = "absent" | "unsupported" | "not_applicable";
  interface NativeEvidence {
    readonly accessAcl: AclEvidence;
    readonly defaultAcl: AclEvidence;
  }

  /**
   * Evidence as the addon returns it: access * 3 + default, each 0 = absent,
   * 1 = unsupported, 2 = not_applicable (decoded by src/native `decodeEvidence`).
   */
  type NativeEvidenceCode = number;

  /** One entry name, or a relative path given as entry names (each validated). */
  type Names = string | readonly string[];

  type NativeEntryType =
    | "file" | "directory" | "symlink" | "fifo" | "socket" | "char_device" | "block_device" | "unknown";

  interface NativeStat {
    readonly type: NativeEntryType;
    readonly dev: string;
    readonly ino: string;
    readonly size: number;
    readonly nlink: number;
    readonly mode: number;
    readonly uid: number;
    readonly mtimeMs: number;
    readonly ctimeMs: number;
  }

  /** A {@link NativeStat} of `statEntry` / `statHandle`, with exact times (ns since 1970, decimal). */
  interface NativeExactStat extends NativeStat {
    readonly atimeNs: string;
    readonly mtimeNs: string;
    readonly ctimeNs: string;
  }

  interface NativeDirEntry {
    readonly name: string;
    readonly type: NativeEntryType;
  }

  interface NativeIdentity {
    readonly platform: string;
    readonly canonicalPath: string;
    readonly dev: string;
    readonly ino: string;
  }

  /** 0 = never create, 1 = create exclusively, 2 = create if missing. */
  type NativeCreateMode = 0 | 1 | 2;

  type Bytes = Uint8Array | string;

  /**
   * What `readDirBatch` did with one entry (`info[i * 11 + 1]`): 0 not a regular file (only
   * stat'ed), 1 read whole into the buffer, 2 passed but larger than the bound or growing
   * (not read), 3 passed but did not fit in the rest of the buffer (not read), 4 refused
   * (the next `failures` element says why).
   */
  type NativeBatchOutcome = 0 | 1 | 2 | 3 | 4;

  /**
   * One directory examined in one call. Per entry `i`, `info[i * 11 + k]` holds, for k =
   * 0 the directory-entry type and 2 the no-follow stat type (-1: not stat'ed), both as
   * indexes into the NativeEntryType order (file, directory, symlink, fifo, socket,
   * char_device, block_device, unknown); 1 the outcome; 3 mode; 4 uid; 5 nlink; 6 size;
   * 7 mtimeMs; 8 ctimeMs; 9 and 10 the offset and length of the content in the buffer. `ids[i * 2]` and
   * `ids[i * 2 + 1]` are dev and ino. `failures` holds one record per refused entry, in order.
   */
  interface NativeDirBatch {
    readonly names: string[];
    readonly info: Float64Array;
    readonly ids: BigUint64Array;
    readonly failures: NativeFailure[];
  }

  /** A `readDirBatch` running on the thread pool (`readDirBatchStart`). */
  interface NativeBatchJob {
    readonly __nativeBatchJob: never;
  }

  /**
   * One `importFilesAsync` batch. Per request `i`, `info[i * 4 + k]` holds, for k = 0 the
   * outcome (0 copied, 1 deferred, 2 changed, 3 failed, 4 mismatch, 5 skipped), 1 how a
   * changed source differed (0 none, 1 unopenable, 2 not regular, 3 hard link, 4 another
   * version when opened, 5 changed while read), 2 and 3 the offset and length of the copied
   * bytes in the buffer. `failures[i]` is set for a failed request and an unopenable source.
   * `digests` holds 32 bytes per request: the SHA-256 of a copied one's bytes.
   */
  interface NativeImportBatch {
    readonly info: Float64Array;
    readonly failures: (NativeFailure | undefined)[];
    readonly digests: Buffer;
  }

  /**
   * One `walkTreeAsync` result. Per entry `i` (path `paths[i]`), `info[i * 4 + k]` holds for
   * k = 0 the depth (root children: 1), 1 the type (NativeEntryType order), 2 the size, 3 the
   * link count; `ids[i * 2]`, `ids[i * 2 + 1]` dev and ino and `times[i * 2]`,
   * `times[i * 2 + 1]` mtime and ctime in ns, all signed as Node's bigint stats are.
   */
  interface NativeTreeWalk {
    readonly paths: string[];
    readonly info: Float64Array;
    readonly ids: BigInt64Array;
    readonly times: BigInt64Array;
    readonly truncated: boolean;
  }

  /** The addon's exports. */
  interface Addon {
    /** The package root the addon was loaded from (set by binding.cjs, not by the addon). */
    readonly packageRoot: string;
    /**
     * Loads the addon now (binding.cjs otherwise loads it on first use) and returns it, or
     * throws the `native_unavailable` error.
     */
    load(): Addon;
    readonly NativeHandle: abstract new () => NativeHandle;
    readonly NativeDigest: abstract new () => NativeDigest;
    createDigest(): NativeDigest | NativeFailure;
    /** The hex digest of everything added; the digest starts afresh. */
    finishDigest(digest: NativeDigest): string | NativeFailure;
    openRoot(path: string, create: boolean, repair: boolean, owned?: boolean): NativeHandle | NativeFailure;
    /**
     * Opens a legacy source read-only (platform.h `open_source`): below the directory handle
     * `start`, or at the absolute path `start` (then `names` may be empty), every name but
     * the last as a source directory, the last as a directory or a file.
     */
    openSource(start: NativeHandle | string, names: Names | readonly [], directory: boolean): NativeHandle | NativeFailure;
    /** Off the main thread: removes directory `name` of `dir` and its whole tree, by descriptor. */
    removeTreeAsync(dir: NativeHandle, name: string, maxDepth: number, maxEntries: number): Promise<undefined | NativeFailure> | NativeFailure;
    /** Sets the access and modification times (ns since 1970) of an open file. */
    setTimes(file: NativeHandle, atimeNs: bigint, mtimeNs: bigint): undefined | NativeFailure;
    openDir(dir: NativeHandle, names: Names, create: boolean, repair: boolean, deferSync: boolean, owned?: boolean): NativeHandle | NativeFailure;
    openFile(
      dir: NativeHandle,
      names: Names,
      write: boolean,
      append: boolean,
      create: NativeCreateMode,
      repair: boolean,
    ): NativeHandle | NativeFailure;
    verify(handle: NativeHandle): NativeEvidenceCode | NativeFailure;
    repair(handle: NativeHandle): NativeEvidenceCode | NativeFailure;
    list(dir: NativeHandle): NativeDirEntry[] | NativeFailure;
    statEntry(dir: NativeHandle, name: string): NativeExactStat | NativeFailure;
    statHandle(handle: NativeHandle): NativeExactStat | NativeFailure;
    /** The descriptor number of an open directory handle (POSIX; `invalid_argument` on Windows). */
    descriptorNumber(handle: NativeHandle): number | NativeFailure;
    read(file: NativeHandle, buffer: Uint8Array, offset: number, length: number, position: number): number | NativeFailure;
    write(file: NativeHandle, buffer: Uint8Array, offset: number, length: number, position: number): number | NativeFailure;
    /** Off the main thread: writes the range at `position`, reads it back and compares. */
    writeVerifiedAsync(
      file: NativeHandle,
      buffer: Uint8Array,
      offset: number,
      length: number,
      position: number,
      digest?: NativeDigest,
    ): Promise<"verified" | "mismatch" | NativeFailure> | NativeFailure;
    append(file: NativeHandle, data: Bytes): number | NativeFailure;
    sync(handle: NativeHandle): undefined | NativeFailure;
    unlink(dir: NativeHandle, name: string): undefined | NativeFailure;
    publishNoReplace(dir: NativeHandle, from: string, to: string): undefined | NativeFailure;
    writeFileAtomic(dir: NativeHandle, name: string, data: Bytes, noReplace: boolean): undefined | NativeFailure;
    /** Off the main thread; an argument failure comes back at once, an operation failure resolves the promise. */
    writeFileAtomicAsync(dir: NativeHandle, name: string, data: Bytes, noReplace: boolean): Promise<undefined | NativeFailure> | NativeFailure;
    /** `sync` off the main thread, with the same two-stage failure reporting. */
    syncAsync(handle: NativeHandle): Promise<undefined | NativeFailure> | NativeFailure;
    tryLock(dir: NativeHandle, name: string, record: Bytes): NativeHandle | NativeFailure;
    close(handle: NativeHandle): undefined;
    directoryIdentity(path: string): NativeIdentity | NativeFailure;
    isValidName(name: string, rules: "posix" | "windows"): boolean;
    classifyAclBytes(bytes: Uint8Array): "minimal" | "extended" | "malformed";
    /**
     * Flushes the whole file system of a directory handle off the main thread: "synced", or
     * "unsupported" where the platform has no such call (not a failure); failures as `syncAsync`.
     */
    syncFilesystemAsync(dir: NativeHandle): Promise<"synced" | "unsupported" | NativeFailure> | NativeFailure;
    /** Lists `dir` and opens owner-only, reads whole into `buffer` and closes each regular file. */
    readDirBatch(dir: NativeHandle, maxFileBytes: number, buffer: Uint8Array): NativeDirBatch | NativeFailure;
    /** `readDirBatch` on the thread pool; the buffer must not be touched until it is finished. */
    readDirBatchStart(dir: NativeHandle, maxFileBytes: number, buffer: Uint8Array): NativeBatchJob | NativeFailure;
    /** Waits for a started batch and returns what `readDirBatch` would have; `closed` the second time. */
    readDirBatchFinish(job: NativeBatchJob): NativeDirBatch | NativeFailure;
    /**
     * Off the main thread: copies the files `names` (each of the version `versions[i * 5 ..]`:
     * dev, ino, size, mtimeNs, ctimeNs) from the unmanaged directory `sourceDir`, which must
     * have the identity `dirId` (dev, ino), into the owner-only directory `dest`, through
     * `buffer`. "unsupported" where the platform has none (Windows).
     */
    importFilesAsync(
      dest: NativeHandle,
      sourceDir: string,
      dirId: BigUint64Array,
      names: string[],
      versions: BigInt64Array,
      buffer: Uint8Array,
    ): Promise<NativeImportBatch | "unsupported" | NativeFailure> | NativeFailure;
    /**
     * Off the main thread: walks the unmanaged tree at `root` (identity `rootId`: dev, ino)
     * without following links. "unsupported" where the platform has none (Windows).
     */
    walkTreeAsync(root: string, rootId: BigUint64Array, maxDepth: number, maxEntries: number): Promise<NativeTreeWalk | "unsupported" | NativeFailure> | NativeFailure;
    /** The same walk checked against an earlier one's result: "same" when every entry matches. */
    walkTreeAsync(
      root: string,
      rootId: BigUint64Array,
      maxDepth: number,
      maxEntries: number,
      expected: NativeTreeWalk,
    ): Promise<"same" | "differs" | "unsupported" | NativeFailure> | NativeFailure;
  }
}

declare const binding: binding.Addon;

export = binding;
