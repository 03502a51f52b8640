/**
 * Catching the typed error of a history call. Its own module, free of vite and vitest, so
 * the Bun contract runner can use it too.
 */
import { HistoryError, type HistoryErrorCode } from "../../src/history/index.js";

/** The HistoryError `fn` throws. */
export function historyError(fn: () => unknown): HistoryError {
  try {
    fn();
  } catch (error) {
    if (error instanceof HistoryError) return error;
    throw error;
  }
  throw new Error("expected a HistoryError, nothing was thrown");
}

/** The `code` of the HistoryError `fn` throws. */
export function historyCode(fn: () => unknown): HistoryErrorCode {
  return historyError(fn).code;
}
