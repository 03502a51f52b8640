/**
 * The engine's refusals that GJC's app catches by class: the face throws GJC's typed error in
 * their place (same stable code), so `instanceof SessionManagedStorageError` and the like work
 * while the rule itself stays in one place, the engine.
 */
import { MigrationError } from "../migration/index.js";
import { SessionManagerError } from "../manager/index.js";
import { SessionArtifactCapacityError, SessionManagedStorageError, SessionMigrationBusyError, SessionMigrationPolicyError } from "./errors.js";

/** GJC's class for `error`, or `error` itself when GJC has none for it. */
export function asGjcError(error: unknown): unknown {
  if (error instanceof SessionManagerError && error.code === "managed_storage_unsupported") return new SessionManagedStorageError();
  if (error instanceof MigrationError) {
    if (error.code === "legacy_migration_disabled") return new SessionMigrationPolicyError();
    if (error.code === "migration_busy") return new SessionMigrationBusyError();
    if (error.code === "artifact_capacity_exceeded") return new SessionArtifactCapacityError(error.message);
  }
  return error;
}

/** Runs `call`, an engine call, with what it throws passed through {@link asGjcError}. */
export function withGjcErrors<T>(call: () => T): T {
  try {
    const result = call();
    if (result instanceof Promise) return result.catch((error: unknown) => Promise.reject(asGjcError(error))) as T;
    return result;
  } catch (error) {
    throw asGjcError(error);
  }
}
