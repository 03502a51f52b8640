/**
 * Assertions on SecureFsError codes (tests assert codes, never messages).
 */
import { SessionDeleteVerificationError } from "../../src/gjc/index.js";
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

/** What `fn` throws (to assert its class and fields); fails the test when it returns normally. */
export function thrownBy(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  throw new Error("expected a throw, but the call returned");
}

/** The `kind` of the `SessionDeleteVerificationError` a verified delete rejects with, or `"resolved"`. */
export async function deleteRefusalOf(step: () => Promise<unknown>): Promise<string> {
  try {
    await step();
  } catch (error) {
    if (error instanceof SessionDeleteVerificationError) return error.kind;
    throw error;
  }
  return "resolved";
}
