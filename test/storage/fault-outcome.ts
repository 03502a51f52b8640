/**
 * What the fault child reports per storage kind, shared by the child and the test.
 */
export interface FaultOutcome {
  /** Records whose write succeeded before the first failure. */
  written: number;
  /** Code and errno of the first failure. */
  code?: string;
  errno?: string;
  /** Codes of later writeLine / write / flush / fsync / rewrite / close calls. */
  later: string[];
  /** Whether every later call rejected with the very same error object. */
  sameError: boolean;
  getErrorIsFirst: boolean;
  logged: { message: string; path: string; code: string }[];
  /** Lines of the file that parse as JSON; the rest is at most one torn record. */
  parsedLines: number;
  unparsedLines: number;
  /** A new writer could take the lock after the failed one was closed. */
  reopened: boolean;
}
