/**
 * Importing files from an unmanaged directory into an owner-only one, many per addon call
 * (see {@link SecureDir.importFilesAsync}).
 */
import path from "node:path";

import type { NativeImportBatch } from "../native/index.js";
import { errorFromFailure, type SecureFsError } from "./errors.js";

/** One file for {@link SecureDir.importFilesAsync}: an entry of the source directory and the exact version it must be. */
export interface ImportRequest {
  /** The entry name, in the source directory and for the copy. */
  readonly name: string;
  readonly dev: bigint;
  readonly ino: bigint;
  readonly size: number;
  readonly mtimeNs: bigint;
  readonly ctimeNs: bigint;
}

/**
 * What the import did with a request: `copied` (created owner-only, written and read back
 * equal; {@link ImportedFile.content} holds its bytes), `deferred` (did not fit in the rest
 * of the buffer; nothing created), `changed` (the source could not be opened or was not the
 * requested version), `failed` (creating, writing or reading back the copy failed),
 * `mismatch` (the copy did not read back as written), `skipped` (not attempted after an
 * earlier request that was neither copied nor deferred).
 */
export type ImportOutcome = "copied" | "deferred" | "changed" | "failed" | "mismatch" | "skipped";

/**
 * How a `changed` source differed: `unopenable` (the no-follow open failed; the error says
 * why, `ELOOP` for a link), `not_regular`, `hardlink`, `before_copy` (another version when
 * opened), `while_copying` (it changed while it was read).
 */
export type ImportChange = "unopenable" | "not_regular" | "hardlink" | "before_copy" | "while_copying";

/** The result for one {@link ImportRequest}. */
export interface ImportedFile {
  readonly name: string;
  readonly outcome: ImportOutcome;
  /** Set for `changed`. */
  readonly change?: ImportChange;
  /** Set for `failed` and for `changed` with `unopenable`. */
  readonly error?: SecureFsError;
  /** Set for `copied`: the bytes written, a view into the caller's buffer. */
  readonly content?: Buffer;
}

// The addon's layout (src/native/binding.d.cts `NativeImportBatch`).
const FIELDS = 4;
const OUTCOMES: readonly ImportOutcome[] = ["copied", "deferred", "changed", "failed", "mismatch", "skipped"];
const CHANGES: readonly (ImportChange | undefined)[] = [undefined, "unopenable", "not_regular", "hardlink", "before_copy", "while_copying"];

/** The native answer of an import as one {@link ImportedFile} per request, in order. */
export function importedFiles(batch: NativeImportBatch, requests: readonly ImportRequest[], buffer: Buffer, sourceDir: string): ImportedFile[] {
  return requests.map((request, i) => {
    const row = i * FIELDS;
    const outcome = OUTCOMES[batch.info[row] as number] ?? "skipped";
    const change = CHANGES[batch.info[row + 1] as number];
    const failure = batch.failures[i];
    const offset = batch.info[row + 2] as number;
    return {
      name: request.name,
      outcome,
      ...(outcome === "changed" && change !== undefined ? { change } : {}),
      ...(failure !== undefined ? { error: errorFromFailure(failure, "importFiles", path.join(sourceDir, request.name)) } : {}),
      ...(outcome === "copied" ? { content: buffer.subarray(offset, offset + (batch.info[row + 3] as number)) } : {}),
    };
  });
}
