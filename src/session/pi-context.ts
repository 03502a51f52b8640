/** pi's reading of a session: the messages of {@link buildSessionContext}, pi's model and thinking level, the display name. */
import { buildContextOnPath, contextPath, type ContextMessage } from "./context.js";
import { type FileEntry, isUnknownEntry, type ModelChangeEntry, sessionInfoName } from "./schemas.js";
import { arrayPathView } from "./tree.js";

/** A model as pi names it. */
export interface PiModelRef {
  provider: string;
  modelId: string;
}

/** The context of a session at one leaf in pi's shape: `thinkingLevel` as {@link buildSessionContext} reads it, `model` by {@link piModelOfPath}. */
export interface PiSessionContext {
  messages: ContextMessage[];
  thinkingLevel: string;
  model: PiModelRef | null;
}

/** Rebuilds the context at `leafId` as pi does: {@link buildSessionContext}'s leaf rules and messages, one model, no roles. */
export function buildPiSessionContext(entries: readonly FileEntry[], leafId?: string | null, byId?: ReadonlyMap<string, FileEntry>): PiSessionContext {
  const path = contextPath(entries, leafId, byId);
  if (path === undefined) return { messages: [], thinkingLevel: "off", model: null };
  const { messages, thinkingLevel } = buildContextOnPath(arrayPathView(path));
  return { messages, thinkingLevel, model: piModelOfPath(path) };
}

/**
 * The model at the end of `path` by pi's rule: the later of a default-role `model_change` (`provider`/`modelId`, or a
 * GJC `model` split at its first `/`; `null` when cleared) and an assistant message naming `provider` and `model`.
 * Unlike the spec's rule, an assistant after an explicit change wins: pi resumes with the model that answered last.
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
      if (role === "assistant" && typeof provider === "string" && typeof model === "string") return { provider, modelId: model };
    }
  }
  return null;
}

function piModelOfChange(entry: ModelChangeEntry): PiModelRef | null {
  if (entry.provider !== undefined && entry.modelId !== undefined) return { provider: entry.provider, modelId: entry.modelId };
  const model = entry.model ?? "";
  const slash = model.indexOf("/");
  return slash <= 0 ? null : { provider: model.slice(0, slash), modelId: model.slice(slash + 1) };
}

/** The display name as pi 0.73.1 reads it: the file's latest `session_info`, on any branch; an empty name clears it. */
export function getSessionInfoName(entries: readonly FileEntry[]): string | undefined {
  for (let i = entries.length - 1; i >= 0; i--) {
    const entry = entries[i]!;
    if (entry.type === "session_info" && !isUnknownEntry(entry)) return sessionInfoName(entry);
  }
  return undefined;
}
