/**
 * GJC's module-level `buildSessionContext`: the engine's context at a leaf, with its messages
 * linked to their entries (see ./messages.ts), so the app can tell which entry a message the
 * model saw came from. The manager links the contexts it builds through {@link linkContextIdentity}.
 */
import { buildSessionContext as buildEngineContext, contextPath, type FileEntry, type SessionContext } from "../session/index.js";
import { associateSessionMessageEntryId, associateSessionMessageObservationId } from "./messages.js";

/** The namespace of observation ids made for a context built outside a session. */
export const LEGACY_SESSION_IDENTITY_NAMESPACE = "legacy-session";

/**
 * The context at `leafId` (`null`: empty; `undefined` or unknown: the last entry), as the main
 * entry's {@link buildEngineContext}, with message identity linked: each `message` entry's
 * message to its entry id, each message made from a `custom_message` to its entry id and an
 * observation id (`details.observationId` when it is a string, else
 * `session:<sessionIdentityNamespace>:entry:<id>`). Summaries get no identity.
 */
export function buildSessionContext(
  entries: readonly FileEntry[],
  leafId?: string | null,
  byId?: ReadonlyMap<string, FileEntry>,
  sessionIdentityNamespace: string = LEGACY_SESSION_IDENTITY_NAMESPACE,
): SessionContext {
  const context = buildEngineContext(entries, leafId, byId);
  linkContextIdentity(context, contextPath(entries, leafId, byId) ?? [], sessionIdentityNamespace);
  return context;
}

/**
 * Links the messages of `context` to the entries of `path` (root first) it was built from, by
 * the rules of {@link buildSessionContext}. A stored message is its entry's own object; the
 * messages made from `custom_message` entries are the last ones of the path (a compaction only
 * ever drops a prefix), so they pair with those entries from the end.
 */
export function linkContextIdentity(context: SessionContext, path: readonly FileEntry[], sessionIdentityNamespace: string): void {
  const stored = new Map<object, string>();
  const customEntries: { id: string; details: unknown }[] = [];
  for (const entry of path) {
    if (typeof entry.id !== "string") continue;
    if (entry.type === "message" && typeof entry.message === "object" && entry.message !== null) stored.set(entry.message, entry.id);
    else if (entry.type === "custom_message") customEntries.push({ id: entry.id, details: entry.details });
  }
  const made: object[] = [];
  for (const message of context.messages) {
    const id = stored.get(message);
    if (id !== undefined) associateSessionMessageEntryId(message, id);
    else if (message.role === "custom") made.push(message);
  }
  for (let m = made.length - 1, e = customEntries.length - 1; m >= 0 && e >= 0; m--, e--) {
    const { id, details } = customEntries[e]!;
    associateSessionMessageEntryId(made[m]!, id);
    associateSessionMessageObservationId(made[m]!, persistedObservationId(details) ?? `session:${sessionIdentityNamespace}:entry:${id}`);
  }
}

function persistedObservationId(details: unknown): string | undefined {
  if (typeof details !== "object" || details === null || Array.isArray(details)) return undefined;
  const id = (details as Record<string, unknown>).observationId;
  return typeof id === "string" ? id : undefined;
}
