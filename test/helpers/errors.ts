/**
 * Assertions on SecureFsError codes (tests assert codes, never messages).
 */
import { SecureFsError, type SecureFsErrorCode } from "../../src/index.js";

/** The SecureFsError code `fn` throws, or undefined when it returns normally. */
export function codeOf(fn: () => unknown): SecureFsErrorCode | undefined {
  try {
    fn();
  } catch (error) {
    if (error instanceof SecureFsError) return error.code;
    throw error;
  }
  return undefined;
}

/** The same for an async operation. */
export async function asyncCodeOf(fn: () => Promise<unknown>): Promise<SecureFsErrorCode | undefined> {
  try {
    await fn();
  } catch (error) {
    if (error instanceof SecureFsError) return error.code;
    throw error;
  }
  return undefined;
}
