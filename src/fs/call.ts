/** The one place addon results become values or thrown SecureFsErrors. */
import { isNativeFailure, type NativeFailure } from "../native/index.js";
import { errorFromFailure, SecureFsError } from "./errors.js";

/** Returns `result`, or throws the SecureFsError its failure record describes. */
export function unwrap<T>(result: T | NativeFailure, operation: string, path?: string): T {
  if (isNativeFailure(result)) throw errorFromFailure(result, operation, path);
  return result;
}

/** Throws `invalid_argument` unless `ok`. For arguments the addon cannot check itself. */
export function requireArgument(ok: boolean, operation: string, path?: string): asserts ok {
  if (!ok) throw new SecureFsError("invalid_argument", { operation, ...(path !== undefined ? { path } : {}) });
}
