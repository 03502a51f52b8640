// Types for the compiled addon (native/binding/addon.cc), one entry per exported function.
// Every function returns its value or a NativeFailure record; none throws.

declare namespace binding {
  /** Reason codes the addon reports (native/core/result.h `code_name`). */
  type NativeFailureCode =
    | "invalid_name" | "invalid_argument" | "not_found" | "already_exists" | "symlink_refused"
    | "not_directory" | "not_regular_file" | "hardlink_refused" | "owner_mismatch" | "mode_mismatch"
    | "acl_present" | "acl_malformed" | "acl_denied" | "acl_io_error" | "acl_unknown"
    | "identity_mismatch" | "permission_denied" | "lock_busy" | "not_utf8" | "network_unsupported"
    | "insecure_ancestor" | "identity_unavailable" | "too_large" | "closed" | "io_error";

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

  /** Per-attribute ACL evidence value. */
  type AclEvidence = "absent" | "unsupported" | "not_applicable";
  /** What a verify proved about ACLs: `absent`, or `unsupported` (the filesystem cannot store one); a file's default ACL `not_applicable`. */
  interface NativeEvidence {
    readonly accessAcl: AclEvidence;
    readonly defaultAcl: AclEvidence;
  }

  /** Evidence as returned: access * 3 + default, each 0 absent, 1 unsupported, 2 not_applicable. */
  type NativeEvidenceCode = number;

  /** One entry name, or a relative path given as entry names (each validated). */
  type Names = string | readonly string[];

  /** Object type as the OS reports it (links are never followed). */
  type NativeEntryType = "file" | "directory" | "symlink" | "fifo" | "socket" | "char_device" | "block_device" | "unknown";

  /** Metadata of an entry or handle: `dev`/`ino` decimal strings (too wide for a double), `mode` the 07777 bits. */
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

  /** One directory entry. */
  interface NativeDirEntry {
    readonly name: string;
    readonly type: NativeEntryType;
  }

  /** Native directory identity. */
  interface NativeIdentity {
    readonly platform: string;
    readonly canonicalPath: string;
    readonly dev: string;
    readonly ino: string;
  }

  /**
   * For the last name, at most one of: `create` when missing, `repair` one we own, accept one we
   * own whatever its mode (`owned`); none verifies owner-only. `deferSync` (openDir with `create`)
   * leaves the creations unsynced. Bad mixes: `invalid_argument`.
   */
  interface NativeDirOptions {
    readonly create?: boolean;
    readonly repair?: boolean;
    readonly owned?: boolean;
    readonly deferSync?: boolean;
  }

  /** Options of `openFile`; `repair` (not with `create`) fixes the mode and ACLs of a file we own. */
  interface NativeFileOptions {
    readonly write?: boolean;
    readonly append?: boolean;
    readonly create?: "exclusive" | "if-missing";
    readonly repair?: boolean;
  }

  /** Data accepted by writes: bytes, or a string written as UTF-8. */
  type Bytes = Uint8Array | string;

  /** What the loader's `native_unavailable` error carries besides its message. */
  interface NativeUnavailableDetails {
    readonly code: "native_unavailable";
    readonly platform: string;
    readonly arch: string;
    readonly libc: string | undefined;
    readonly abi: string;
    readonly napiVersion: number;
  }

  /** The addon's exports. */
  interface Addon {
    /** Loads the addon now (else it loads on first use), or throws `native_unavailable`. */
    load(): Addon;
    /** On Linux the libc whose prebuild fits this process ("glibc" or "musl", `LIBC` honoured); "" elsewhere or when unknown. Loads nothing. */
    libc(): string;
    /** The SQLite extension built with the loaded addon (loading it first), if one was. */
    pinnedVfsPath(): string | undefined;
    /** Replaces the plain coded Error a failed load throws (src/native/index.ts sets it once). */
    setUnavailableError(wrap: (error: Error & NativeUnavailableDetails) => Error): void;
    openRoot(path: string, options?: NativeDirOptions): NativeHandle | NativeFailure;
    /** Opens a legacy source read-only below handle `start` or at path `start` (`names` then may be empty); `directory` for one. */
    openSource(start: NativeHandle | string, names: Names | readonly [], options?: { readonly directory?: boolean }): NativeHandle | NativeFailure;
    /** Always off the main thread: removes directory `name` of `dir` and its whole tree, by descriptor, within the limits. */
    removeTree(dir: NativeHandle, name: string, limits: { readonly maxDepth: number; readonly maxEntries: number }): Promise<undefined | NativeFailure> | NativeFailure;
    /** Sets the access and modification times (ns since 1970) of an open file. */
    setTimes(file: NativeHandle, atimeNs: bigint, mtimeNs: bigint): undefined | NativeFailure;
    openDir(dir: NativeHandle, names: Names, options?: NativeDirOptions): NativeHandle | NativeFailure;
    openFile(dir: NativeHandle, names: Names, options?: NativeFileOptions): NativeHandle | NativeFailure;
    /** Checks owner-only again; with `repair`, first fixes the mode and ACLs of one we own. */
    verify(handle: NativeHandle, options?: { readonly repair?: boolean }): NativeEvidenceCode | NativeFailure;
    /** Entries of `dir` but `.` and `..`; with `prefix`, only those whose names start with it. */
    list(dir: NativeHandle, prefix?: string): NativeDirEntry[] | NativeFailure;
    statEntry(dir: NativeHandle, name: string): NativeExactStat | NativeFailure;
    statHandle(handle: NativeHandle): NativeExactStat | NativeFailure;
    /** The descriptor number of an open directory handle (POSIX; `invalid_argument` on Windows). */
    descriptorNumber(handle: NativeHandle): number | NativeFailure;
    read(file: NativeHandle, buffer: Uint8Array, offset: number, length: number, position: number): number | NativeFailure;
    write(file: NativeHandle, buffer: Uint8Array, offset: number, length: number, position: number): number | NativeFailure;
    append(file: NativeHandle, data: Bytes): number | NativeFailure;
    sync(handle: NativeHandle, options?: { readonly async?: false }): undefined | NativeFailure;
    /** Off the main thread: an argument failure comes back at once, an operation failure resolves the promise. */
    sync(handle: NativeHandle, options: { readonly async: true }): Promise<undefined | NativeFailure> | NativeFailure;
    unlink(dir: NativeHandle, name: string): undefined | NativeFailure;
    publishNoReplace(dir: NativeHandle, from: string, to: string): undefined | NativeFailure;
    /** Replaces `name` atomically, or with `noReplace` creates it (`already_exists` when taken); `async` as for `sync`. */
    writeFileAtomic(dir: NativeHandle, name: string, data: Bytes, options?: { readonly noReplace?: boolean; readonly async?: false }): undefined | NativeFailure;
    writeFileAtomic(dir: NativeHandle, name: string, data: Bytes, options: { readonly noReplace?: boolean; readonly async: true }): Promise<undefined | NativeFailure> | NativeFailure;
    tryLock(dir: NativeHandle, name: string, record: Bytes): NativeHandle | NativeFailure;
    close(handle: NativeHandle): undefined;
    directoryIdentity(path: string): NativeIdentity | NativeFailure;
    isValidName(name: string, rules: "posix" | "windows"): boolean;
    classifyAclBytes(bytes: Uint8Array): "minimal" | "extended" | "malformed";
    /**
     * Linux only (absent elsewhere): the POSIX ACL xattr values of entry `name` below `dir`, of the type `directory`
     * says, reached without following a link and read whatever its owner and mode; empty where none is stored.
     */
    readAcl?(dir: NativeHandle, name: string, directory: boolean): { readonly access: Uint8Array; readonly default: Uint8Array } | NativeFailure;
  }
}

declare const binding: binding.Addon;

export = binding;
