/**
 * GJC's module-level `buildSessionContext`: the engine's context at a leaf, with its messages
 * linked to their entries (see ./messages.ts), so the app can tell which entry a message the
 * model saw came from. The manager links the contexts it builds through {@link linkContextIdentity}.
 */
import { arrayPathView, buildSessionContext as buildEngineContext, contextPath, isUnknownEntry } from "../session/index.js";
import type { FileEntry, PathView, SessionContext, SessionEntry } from "../session/index.js";
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
  linkContextIdentity(context, arrayPathView(contextPath(entries, leafId, byId) ?? []), sessionIdentityNamespace);
  return context;
}

/**
 * Links the messages of `context` to the entries of `path` (root first; `undefined`: none) it was built from, by the
 * rules of {@link buildSessionContext}. Only the latest compaction counts and it drops a prefix of the path, so the
 * context's messages after its summary are made, in order, by the last entries of the path that make one (`message`,
 * `custom_message`, a non-empty `branch_summary`): they pair from the end. The path is walked back from the leaf only
 * as far as the context reaches, so a long session's resume reads no entry the context did not. Copies of the entries
 * do as well as the originals.
 */
export function linkContextIdentity(context: SessionContext, path: PathView | undefined, sessionIdentityNamespace: string): void {
  const messages = context.messages;
  const first = messages[0]?.role === "compactionSummary" ? 1 : 0;
  if (path === undefined || messages.length <= first) return;
  let m = messages.length - 1;
  let i = path.length - 1;
  while (i >= 0 && m >= first) {
    // The entries of as many makers as messages are left to pair, asked for at once (an entry that makes none, such as an
    // empty branch summary, sends the walk back for more).
    const wanted: number[] = [];
    for (; i >= 0 && wanted.length <= m - first; i--) if (MESSAGE_MAKERS.has(path.typeAt(i))) wanted.push(i);
    const entries = path.entriesAt(wanted.reverse());
    for (let k = entries.length - 1; k >= 0 && m >= first; k--) {
      const entry = entries[k]!;
      if (!makesMessage(entry)) continue;
      const message = messages[m--]!;
      if (entry.type === "message") associateSessionMessageEntryId(message, entry.id);
      else if (entry.type === "custom_message") {
        associateSessionMessageEntryId(message, entry.id);
        associateSessionMessageObservationId(message, persistedObservationId(entry.details) ?? `session:${sessionIdentityNamespace}:entry:${entry.id}`);
      }
    }
  }
}

/** The entry types that can make a context message. */
const MESSAGE_MAKERS: ReadonlySet<string> = new Set(["message", "custom_message", "branch_summary"]);

type MessageMaker = Extract<SessionEntry, { type: "message" | "custom_message" | "branch_summary" }>;

function makesMessage(entry: FileEntry): entry is MessageMaker {
  if (isUnknownEntry(entry) || typeof entry.id !== "string") return false;
  return entry.type === "message" || entry.type === "custom_message" || (entry.type === "branch_summary" && entry.summary !== "");
}

function persistedObservationId(details: unknown): string | undefined {
  if (typeof details !== "object" || details === null || Array.isArray(details)) return undefined;
  const id = (details as Record<string, unknown>).observationId;
  return typeof id === "string" ? id : undefined;
}
