/**
 * The root of every error this package throws on purpose: `instanceof GjcError` tells a library
 * refusal from a bug. Each layer has a subclass with a closed union of codes; branch on `code`
 * (stable, free of paths and user data); `message` is for people; `name` is the subclass's.
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
