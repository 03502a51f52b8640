/** SecureFsError, the one error type of the secure filesystem layer, and the one place addon results become values or throws. */
import { constants as osConstants } from "node:os";
import { getSystemErrorMap } from "node:util";

import { GjcError } from "../errors.js";
import { isNativeFailure, type NativeFailure, type NativeFailureCode } from "../native/index.js";

/** Which ACL attribute a failure (or a piece of evidence) is about. */
export type AclAttribute = "access_acl" | "default_acl";

// One description per code, in README order; `satisfies` keeps the keys exactly the addon's codes.
const DESCRIPTIONS = {
  invalid_name: "not a single safe entry name",
  invalid_argument: "invalid argument",
  not_found: "no such entry",
  already_exists: "the name is already taken",
  symlink_refused: "a symbolic link is not followed here",
  not_directory: "not a directory",
  not_regular_file: "not a regular file",
  hardlink_refused: "the file has more than one link",
  owner_mismatch: "not owned by the effective user",
  mode_mismatch: "permissions are not owner-only",
  acl_present: "an ACL is stored on it",
  acl_malformed: "its ACL bytes do not parse",
  acl_denied: "reading its ACL was refused",
  acl_io_error: "reading its ACL failed with an I/O error",
  acl_unknown: "its ACL state could not be established",
  identity_mismatch: "it is no longer the object that was checked",
  permission_denied: "the operating system refused the operation",
  lock_busy: "the lock is held by someone else",
  not_utf8: "the operating system path is not valid UTF-8",
  network_unsupported: "network filesystems are not supported",
  insecure_ancestor: "a directory above it can be replaced by another user",
  identity_unavailable: "the operating system gave no stable identity",
  too_large: "more data than the bound allows",
  closed: "the handle is closed",
  io_error: "input/output failure",
} as const satisfies Record<NativeFailureCode, string>;

/** The closed union of SecureFsError codes. */
export type SecureFsErrorCode = keyof typeof DESCRIPTIONS;

/** Every reason code of the secure filesystem layer, in README order; stable. */
export const SECURE_FS_ERROR_CODES = Object.keys(DESCRIPTIONS) as readonly SecureFsErrorCode[];

/** Options describing where a failure happened. */
export interface SecureFsErrorDetails {
  /** Node-style errno (negative, as in `fs` errors), when an OS error is behind the failure. */
  readonly errno?: number;
  /** The OS error name, e.g. `"ELOOP"`. */
  readonly errnoName?: string;
  /** The system call that failed, e.g. `"openat"`. */
  readonly syscall?: string;
  /** The ACL attribute involved, for `acl_*` codes. */
  readonly attribute?: AclAttribute;
  /** The path involved, for people; it never appears in `code`. */
  readonly path?: string;
  /** The library operation that failed, e.g. `"openFile"`. */
  readonly operation?: string;
}

/** A secure filesystem operation refused or failed; branch on `code`, the rest says which OS answer led there. */
export class SecureFsError extends GjcError<SecureFsErrorCode> {
  /** {@inheritDoc SecureFsErrorDetails.errno} */
  readonly errno: number | undefined;
  /** {@inheritDoc SecureFsErrorDetails.errnoName} */
  readonly errnoName: string | undefined;
  /** {@inheritDoc SecureFsErrorDetails.syscall} */
  readonly syscall: string | undefined;
  /** {@inheritDoc SecureFsErrorDetails.attribute} */
  readonly attribute: AclAttribute | undefined;
  /** {@inheritDoc SecureFsErrorDetails.path} */
  readonly path: string | undefined;
  /** {@inheritDoc SecureFsErrorDetails.operation} */
  readonly operation: string | undefined;

  constructor(code: SecureFsErrorCode, details: SecureFsErrorDetails = {}) {
    super(code, describe(code, details));
    this.errno = details.errno;
    this.errnoName = details.errnoName;
    this.syscall = details.syscall;
    this.attribute = details.attribute;
    this.path = details.path;
    this.operation = details.operation;
  }
}

function describe(code: SecureFsErrorCode, details: SecureFsErrorDetails): string {
  let message = `${code}: ${DESCRIPTIONS[code]}`;
  if (details.attribute) message += ` (${details.attribute})`;
  if (details.errnoName) {
    const uvMessage = details.errno === undefined ? undefined : getSystemErrorMap().get(details.errno)?.[1];
    message += ` [${details.errnoName}${uvMessage ? `: ${uvMessage}` : ""}]`;
  }
  if (details.operation || details.syscall) {
    message += `, ${[details.operation, details.syscall].filter(Boolean).join(" ")}`;
  }
  if (details.path !== undefined) message += ` '${details.path}'`;
  return message;
}

let errnoNames: Map<number, string> | undefined;
let uvErrnos: Map<string, number> | undefined;

/** A C errno's name and Node-style errno from Node's own tables, so both match `fs` errors on every platform. */
function describeErrno(cErrno: number): { errno: number; errnoName: string } | undefined {
  if (cErrno <= 0) return undefined;
  if (!errnoNames || !uvErrnos) {
    errnoNames = new Map();
    for (const [name, value] of Object.entries(osConstants.errno)) {
      if (!errnoNames.has(value)) errnoNames.set(value, name);
    }
    uvErrnos = new Map();
    for (const [uv, [name]] of getSystemErrorMap()) uvErrnos.set(name, uv);
  }
  const errnoName = errnoNames.get(cErrno);
  if (errnoName === undefined) return { errno: -cErrno, errnoName: `E${cErrno}` };
  return { errno: uvErrnos.get(errnoName) ?? -cErrno, errnoName };
}

/** Returns `result`, or throws the SecureFsError its failure record describes. */
export function unwrap<T>(result: T | NativeFailure, operation: string, path?: string): T {
  if (!isNativeFailure(result)) return result;
  throw new SecureFsError(result.code, {
    ...(describeErrno(result.errno) ?? {}),
    ...(result.syscall ? { syscall: result.syscall } : {}),
    ...(result.attribute ? { attribute: result.attribute } : {}),
    ...(path !== undefined ? { path } : {}),
    operation,
  });
}

/** Throws `invalid_argument` unless `ok`. For arguments the addon cannot check itself. */
export function requireArgument(ok: boolean, operation: string, path?: string): asserts ok {
  if (!ok) throw new SecureFsError("invalid_argument", { operation, ...(path !== undefined ? { path } : {}) });
}

/** `fn()`, or `undefined` when it fails with the fs layer's `not_found`. */
export function unlessMissing<T>(fn: () => T): T | undefined {
  try {
    return fn();
  } catch (error) {
    if (error instanceof SecureFsError && error.code === "not_found") return undefined;
    throw error;
  }
}
