/**
 * GJC's destination arguments: `undefined` (the managed scope of the cwd), a string (an explicit session directory), or a
 * token issued here, checked by identity so that a look-alike object cannot point a manager at a directory nobody resolved.
 */
import path from "node:path";

import { FileSessionStorage, type SessionStorage } from "../storage/index.js";
import { managedSessionTarget } from "../scope/session-defaults.js";
import { SessionManagerError } from "./errors.js";
import { resolveOptions, type ResolvedOptions, type SessionManagerOptions, type SessionTarget } from "./options.js";

/** A trusted destination token; only {@link managedDestination} and {@link explicitDestination} make them. */
export interface SessionDestination {
  readonly kind: "managed" | "explicit";
  /** The absolute session directory the token resolves to. */
  readonly sessionDir: string;
  /** The same directory under GJC's field name, which GJC's app and tests read (`destination.directory`). */
  readonly directory: string;
}

/** What the factories accept where GJC takes a `SessionDestinationInput`. */
export type SessionDestinationInput = string | SessionDestination | undefined;

/** GJC's legacy-layout policy argument; both values behave alike (see {@link resolveFactoryOptions}). */
export type MigrationPolicy = "copy-retain" | "disabled";

/** GJC's resident-memory mode argument; it has no effect here (see {@link resolveFactoryOptions}). */
export type SessionMemoryMode = "off" | "shadow" | "enabled" | "auto";

/** What each issued token resolves to besides its directory. */
const issued = new WeakMap<object, Pick<SessionTarget, "storage" | "agentDir">>();

function issue(kind: SessionDestination["kind"], sessionDir: string, token: Pick<SessionTarget, "storage" | "agentDir">): SessionDestination {
  const destination: SessionDestination = Object.freeze({ kind, sessionDir, directory: sessionDir });
  issued.set(destination, token);
  return destination;
}

/** Refuses a caller storage where the managed scope is used (it is reached through owner-only managed storage). @throws SessionManagerError `managed_storage_unsupported` */
export function checkManagedStorage(storage: SessionStorage | undefined): void {
  if (storage !== undefined && !(storage instanceof FileSessionStorage)) {
    throw new SessionManagerError("managed_storage_unsupported", "a managed session scope needs file storage; pass a session directory to use another storage");
  }
}

/** Resolves and prepares (creates owner-only, binds) the managed scope of `cwd`; a token for it. @throws SessionManagerError `managed_storage_unsupported`, `invalid_options`; ScopeError */
export function managedDestination(cwd: string, agentDir?: string, storage?: SessionStorage): SessionDestination {
  checkManagedStorage(storage);
  if (agentDir !== undefined && !path.isAbsolute(agentDir)) throw new SessionManagerError("invalid_options", "agentDir must be an absolute path");
  const target = managedSessionTarget(cwd, agentDir);
  return issue("managed", target.sessionDir, { storage: target.storage, agentDir: target.agentDir });
}

/** A token for the explicit session directory `directory` (explicit-directory rules apply). @throws SessionManagerError `invalid_options` for a relative or empty path */
export function explicitDestination(directory: string): SessionDestination {
  if (typeof directory !== "string" || !path.isAbsolute(directory)) {
    throw new SessionManagerError("invalid_options", "an explicit destination must be an absolute directory");
  }
  return issue("explicit", path.resolve(directory), { storage: undefined, agentDir: undefined });
}

/** The session target of a destination argument for `cwd`. @throws SessionManagerError `untrusted_destination` for an object not issued here, `managed_storage_unsupported`, `invalid_options` */
export function targetOf(cwd: string, destination: SessionDestinationInput, storage: SessionStorage | undefined): SessionTarget {
  if (typeof cwd !== "string" || cwd.length === 0) throw new SessionManagerError("invalid_options", "cwd must be a non-empty string");
  if (destination === undefined) {
    checkManagedStorage(storage);
    return { sessionDir: undefined, storage: undefined, cwd };
  }
  if (typeof destination === "string") {
    if (!path.isAbsolute(destination)) throw new SessionManagerError("invalid_options", "the session directory must be an absolute path");
    return { sessionDir: path.resolve(destination), storage, cwd };
  }
  const token = typeof destination === "object" && destination !== null ? issued.get(destination) : undefined;
  if (token === undefined) {
    throw new SessionManagerError("untrusted_destination", "the session destination was not issued by managedDestination or explicitDestination");
  }
  if (destination.kind === "managed") {
    checkManagedStorage(storage);
    return { sessionDir: destination.sessionDir, storage: token.storage, cwd, agentDir: token.agentDir, managed: true };
  }
  return { sessionDir: destination.sessionDir, storage, cwd };
}

// The values GJC's policy arguments may take. Both migration policies behave alike: no factory
// adopts a legacy session implicitly (only the explicit copy-retain migration does), so there is
// nothing for "disabled" to stop. The memory mode tunes GJC's resident caches and spill sidecars;
// this store keeps the parsed session in memory and nothing beside it.
/** GJC's policy arguments of a factory, `undefined` where not given. */
export type Policies = { migrationPolicy: MigrationPolicy | undefined; sessionMemoryMode: SessionMemoryMode | undefined };

const POLICY_VALUES = {
  migrationPolicy: ["copy-retain", "disabled"],
  sessionMemoryMode: ["off", "shadow", "enabled", "auto"],
} as const;

/**
 * The options a factory taking GJC's policy arguments runs with: the policies checked, then the destination resolved for `cwd`.
 * @throws SessionManagerError `invalid_options` for an unknown policy value; what {@link targetOf} and `resolveOptions` throw
 */
export function resolveFactoryOptions(
  cwd: string,
  destination: SessionDestinationInput,
  storage: SessionStorage | undefined,
  policies: Policies,
  options: SessionManagerOptions,
): ResolvedOptions {
  for (const name of ["migrationPolicy", "sessionMemoryMode"] as const) {
    const value = policies[name];
    if (value !== undefined && !(POLICY_VALUES[name] as readonly string[]).includes(value)) {
      throw new SessionManagerError("invalid_options", `unknown ${name}: ${String(value)}`);
    }
  }
  return resolveOptions(targetOf(cwd, destination, storage), options);
}
