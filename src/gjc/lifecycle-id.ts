/** The session id GJC's lifecycle daemon hands the process it spawns to host a session. */
import type { SessionManager as Engine } from "../manager/session-manager.js";
import { isValidSessionId } from "../session/ids.js";
import { hooks } from "./face-core.js";

/**
 * The id GJC's lifecycle daemon preallocated, when this process was spawned by it to host a created or forked session
 * (`GJC_LIFECYCLE_REQUEST_ID` set): the daemon has already published `GJC_SESSION_ID` as the session's id
 * (terminal tag, endpoint discovery, recent list), so the header must carry the same one or resume-by-id breaks, and GJC's
 * session host refuses to start. Only a normal session id is taken.
 */
export function lifecycleSessionId(): string | undefined {
  if (!process.env.GJC_LIFECYCLE_REQUEST_ID) return undefined;
  const id = process.env.GJC_SESSION_ID?.trim();
  return id !== undefined && isValidSessionId(id) ? id : undefined;
}

/** Gives a just-created session the {@link lifecycleSessionId}; later sessions of the manager get fresh ids. */
export function withLifecycleId(engine: Engine): Engine {
  const id = lifecycleSessionId();
  // Nothing of the created session is written yet, so entering a session with the preallocated id replaces it whole.
  if (id !== undefined) hooks.newSession(engine, { id });
  return engine;
}
