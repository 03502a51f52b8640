/**
 * The root of every error this package throws on purpose: one `instanceof GjcError` check
 * tells a library refusal from a bug or a foreign error.
 *
 * Each layer has its own subclass with a closed union of codes: `SecureFsError` (fs),
 * `StorageError` (storage), `SessionFormatError`, `SessionTreeError` and
 * `PersistSanitizeError` (session), `SessionManagerError` (manager), `ScopeError` (scope),
 * `MigrationError` (migration), `HistoryError` (history) and `AuditError` (audit). Callers
 * branch on `code`, which is stable across releases and never holds a path or other user
 * data; `message` is for people and may change; `name` is the subclass's name.
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
