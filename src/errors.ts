/**
 * The root of every error this package throws on purpose.
 *
 * Each subsystem defines its own subclass with a closed union of codes (for example
 * `SecureFsError` in `fs/`, `SessionFormatError` in `session/`). Callers branch on `code`,
 * which is stable across releases; `message` is for people and may change.
 */
export class GjcError<Code extends string = string> extends Error {
  /** Stable, machine-readable reason. Never contains a path or other user data. */
  readonly code: Code;

  constructor(code: Code, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    this.name = new.target.name;
  }
}
