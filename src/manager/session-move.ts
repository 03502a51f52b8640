/**
 * `moveTo` for a managed session: the session file follows its workspace to the new cwd's
 * managed scope.
 *
 * Order, chosen so that a crash at any point loses nothing: everything queued is flushed to
 * the old file; the complete session (new header cwd included) is published in the new scope
 * with a durable no-replace step and its writer opened; only then is the old writer closed and
 * the old file removed. A crash before the publish leaves the old file; after it, the new one
 * (and possibly the old one too, a complete duplicate).
 */
import path from "node:path";

import type { BlobSink, SessionHeader } from "../session/index.js";
import { managedSessionTarget } from "../scope/session-defaults.js";
import { serializeManagedLines } from "./lines.js";
import type { ResolvedOptions } from "./options.js";
import { removeLineIndex } from "./line-index.js";
import { SessionPersistence } from "./persistence.js";
import { persistenceTarget, type SessionState } from "./session-state.js";

function ignore(): void {}

/**
 * Moves `state` (a managed, persisting session) to the managed scope of `header.cwd`, and
 * gives it `header`. `state` is updated in place.
 * @returns the options of the new scope (directory and storage)
 * @throws ScopeError for an unusable cwd; SessionManagerError `persistence_failed`
 */
export async function moveManagedSession(
  state: SessionState,
  options: ResolvedOptions,
  header: SessionHeader,
  sink: BlobSink | undefined,
  onDroppedInertPatches: (count: number) => void,
): Promise<ResolvedOptions> {
  const scope = managedSessionTarget(header.cwd ?? process.cwd(), options.agentDir);
  const moved: ResolvedOptions = { ...options, sessionDir: scope.sessionDir, storage: scope.storage };
  const file = path.join(scope.sessionDir, path.basename(state.file!));
  const next = new SessionPersistence(persistenceTarget(moved, file, () => state.header.cwd));
  const old = state.persistence!;
  const oldFile = state.file!;
  const onDisk = state.active || state.fileExists;
  if (onDisk) {
    await old.flush();
    const serialized = serializeManagedLines(header, state.lines, sink);
    next.writeAllNow(serialized.bytes);
    onDroppedInertPatches(serialized.droppedInertPatches);
    state.lines = state.lines.filter((line) => line.kind !== "patch" || line.state === "skipped");
    state.fullWritePending = false;
    state.fileExists = true;
    state.active = true;
  }
  state.header = header;
  state.file = file;
  state.persistence = next;
  await old.close().catch(ignore);
  if (!onDisk) return moved;
  try {
    await options.storage.unlink(oldFile);
    await removeLineIndex(options.storage, oldFile);
  } catch (error) {
    // The session is whole at its new place; a second copy left behind loses nothing.
    const code = typeof (error as { code?: unknown })?.code === "string" ? String((error as { code: string }).code) : "unknown";
    options.logger.error("Session move left the previous file in place.", { path: oldFile, code, cause: error });
  }
  return moved;
}
