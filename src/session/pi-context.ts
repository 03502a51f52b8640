/**
 * pi's reading of a session, for a pi-shaped facade over the same tree: which model and
 * thinking level a conversation continues with, and the session's display name. The messages
 * are the ones {@link buildSessionContext} builds; only the settings follow pi's rules.
 */
import { buildContextOnPath, contextPath, type ContextMessage } from "./context.js";
import { type FileEntry, isUnknownEntry, type ModelChangeEntry, sessionInfoName } from "./schemas.js";
import { arrayPathView } from "./tree.js";

/** A model as pi names it. */
export interface PiModelRef {
  provider: string;
  modelId: string;
}

/** The context of a session at one leaf, in pi's shape. */
export interface PiSessionContext {
  messages: ContextMessage[];
  /** the latest `thinking_level_change` on the path; `"off"` when none (or when it was `null`) */
  thinkingLevel: string;
  /** see {@link piModelOfPath} */
  model: PiModelRef | null;
}

/**
 * Rebuilds the context at `leafId` as pi does. The leaf rules and the messages are those of
 * {@link buildSessionContext}; the settings differ:
 *
 * - `model` follows pi's rule ({@link piModelOfPath}): whichever comes last on the path, a
 *   model change or an assistant message, names the model;
 * - there is one model and one thinking level, no roles, tiers or tool selections.
 */
export function buildPiSessionContext(entries: readonly FileEntry[], leafId?: string | null, byId?: ReadonlyMap<string, FileEntry>): PiSessionContext {
  const path = contextPath(entries, leafId, byId);
  if (path === undefined) return { messages: [], thinkingLevel: "off", model: null };
  const { messages, thinkingLevel } = buildContextOnPath(arrayPathView(path));
  return { messages, thinkingLevel, model: piModelOfPath(path) };
}

/**
 * The model in force at the end of `path` by pi's rule: the last of these on the path decides.
 *
 * - A `model_change` of the default role (pi writes no role): its `provider`/`modelId`, or a
 *   GJC `model` split at its first `/`. A GJC change that clears the default role leaves no
 *   model (`null`). Changes of other roles are GJC's and name no model pi would use.
 * - An assistant message that names its `provider` and `model`.
 *
 * Unlike the spec's rule, an assistant message after an explicit change overrides it: pi resumes
 * with the model that answered last.
 */
export function piModelOfPath(path: readonly FileEntry[]): PiModelRef | null {
  for (let i = path.length - 1; i >= 0; i--) {
    const entry = path[i]!;
    if (isUnknownEntry(entry)) continue;
    if (entry.type === "model_change") {
      if ((entry.role ?? "default") !== "default") continue;
      return entry.cleared === true ? null : piModelOfChange(entry);
    }
    if (entry.type === "message") {
      const { role, provider, model } = entry.message;
      if (role === "assistant" && typeof provider === "string" && typeof model === "string") {
        return { provider, modelId: model };
      }
    }
  }
  return null;
}

function piModelOfChange(entry: ModelChangeEntry): PiModelRef | null {
  if (entry.provider !== undefined && entry.modelId !== undefined) {
    return { provider: entry.provider, modelId: entry.modelId };
  }
  const model = entry.model ?? "";
  const slash = model.indexOf("/");
  return slash <= 0 ? null : { provider: model.slice(0, slash), modelId: model.slice(slash + 1) };
}

/**
 * The session's display name from its `session_info` entries, as pi 0.73.1 reads it: the
 * latest `session_info` in the file decides (in file order, on any branch, because a name
 * belongs to the session rather than to a conversation path). Its `name` is trimmed; an empty
 * or absent name clears the name (`undefined`). pi 0.58.3 skipped empty ones instead, which
 * made a name impossible to clear. `SessionTree.getSessionInfoName` keeps the same answer as
 * entries are added, without a scan.
 */
export function getSessionInfoName(entries: readonly FileEntry[]): string | undefined {
  for (let i = entries.length - 1; i >= 0; i--) {
    const entry = entries[i]!;
    if (entry.type === "session_info" && !isUnknownEntry(entry)) return sessionInfoName(entry);
  }
  return undefined;
}
