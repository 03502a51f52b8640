/** The typed face of the native addon: the only module that loads it (everything else uses `src/fs/`). */

import binding from "#binding";
import type { AclEvidence, NativeEvidence, NativeEvidenceCode, NativeFailure } from "#binding";
import { GjcError } from "../errors.js";

// The addon's value types (documented in binding.d.cts), under the names src/fs gives them publicly.
export type {
  Bytes as SecureData,
  NativeDirEntry as SecureDirEntry,
  NativeEntryType as EntryType,
  NativeEvidence as VerifyEvidence,
  NativeExactStat as ExactStat,
  NativeFailure,
  NativeFailureCode,
  NativeHandle,
  NativeStat as SecureStat,
} from "#binding";

/** Thrown by the first call needing the addon when no build matches or it fails to load; pure session code and memory storage work without it. */
export class NativeUnavailableError extends GjcError<"native_unavailable"> {
  /** `process.platform` as the loader saw it. */
  readonly platform: string;
  /** `process.arch` as the loader saw it. */
  readonly arch: string;
  /** `glibc` or `musl` on Linux, else undefined. */
  readonly libc: string | undefined;
  /** Node's module ABI (`process.versions.modules`). */
  readonly abi: string;
  /** The runtime's Node-API version. */
  readonly napiVersion: number;

  constructor(plain: Error & binding.NativeUnavailableDetails) {
    super("native_unavailable", plain.message, { cause: plain.cause });
    this.platform = plain.platform;
    this.arch = plain.arch;
    this.libc = plain.libc;
    this.abi = plain.abi;
    this.napiVersion = plain.napiVersion;
  }
}

// A bare addon standing in for the loader (a test's pinned copy) has no hook.
if (typeof binding.setUnavailableError === "function") {
  binding.setUnavailableError((plain) => new NativeUnavailableError(plain));
}

/** The addon's functions, typed 1:1 with native/binding/addon.cc. */
export const native: binding.Addon = binding;

/** True when an addon call returned a failure record instead of its value. */
export function isNativeFailure(value: unknown): value is NativeFailure {
  return typeof value === "object" && value !== null && (value as { failed?: unknown }).failed === true;
}

const EVIDENCE_VALUES: readonly AclEvidence[] = ["absent", "unsupported", "not_applicable"];

// One frozen object per possible answer: verify is a hot path and allocates nothing.
const EVIDENCE_TABLE: readonly NativeEvidence[] = EVIDENCE_VALUES.flatMap((accessAcl) =>
  EVIDENCE_VALUES.map((defaultAcl) => Object.freeze({ accessAcl, defaultAcl })),
);

/** Decodes the addon's evidence number (access * 3 + default) into a shared frozen object. */
export function decodeEvidence(code: NativeEvidenceCode): NativeEvidence {
  const evidence = EVIDENCE_TABLE[code];
  if (evidence === undefined) throw new RangeError(`unknown evidence code ${code}`);
  return evidence;
}

/**
 * @internal The SQLite extension keeping `/proc/self/fd/<n>/<name>` paths as given
 * (native/sqlite/pinned_vfs.c), built with the loaded addon on Linux (the prebuild of the
 * running libc, or the one compiled at install); `undefined` elsewhere or unbuilt.
 */
export function pinnedVfsExtensionPath(): string | undefined {
  if (process.platform !== "linux") return undefined;
  return binding.pinnedVfsPath();
}
