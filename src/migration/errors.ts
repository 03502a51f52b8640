/** Codes of legacy discovery and copy-retain migration. */
import { GjcError } from "../errors.js";
import { SecureFsError } from "../fs/index.js";
import { SCOPE_ERROR_CODES } from "../scope/index.js";

/** Codes only migration produces, in README order. */
const MIGRATION_ONLY_ERROR_CODES = [
  "legacy_migration_disabled",
  "migration_retired",
  "destination_conflict",
  "source_changed",
  "unsafe_source",
  "unsafe_artifacts",
  "artifact_capacity_exceeded",
  "not_a_candidate",
] as const;

/** Every code a migration may fail with: the scope codes plus the migration-only ones. */
export const MIGRATION_ERROR_CODES = [...SCOPE_ERROR_CODES, ...MIGRATION_ONLY_ERROR_CODES] as const;

/** The closed union of migration failure codes. */
export type MigrationErrorCode = (typeof MIGRATION_ERROR_CODES)[number];

/** A failed migration as a value. `cause` is a path-free detail token. */
export interface MigrationFailure {
  readonly kind: "error";
  readonly code: MigrationErrorCode;
  readonly cause: string;
  readonly message: string;
}

/** Thrown inside the migration steps and turned into a {@link MigrationFailure} at the API edge. */
export class MigrationError extends GjcError<MigrationErrorCode> {
  /** Path-free detail of the failure. */
  readonly detail: string;

  constructor(code: MigrationErrorCode, detail: string, message: string) {
    super(code, message);
    this.detail = detail;
  }

  /** This error as a result value. */
  toFailure(): MigrationFailure {
    return { kind: "error", code: this.code, cause: this.detail, message: this.message };
  }
}

/** The failure value of a write operation (`what`) that threw: its own code, or `durability_failed` for an fs error; anything else is rethrown. */
export function writeFailure(error: unknown, what: string): MigrationFailure {
  if (error instanceof MigrationError) return error.toFailure();
  if (error instanceof SecureFsError) return { kind: "error", code: "durability_failed", cause: error.code, message: `${what} failed (${error.code})` };
  throw error;
}
