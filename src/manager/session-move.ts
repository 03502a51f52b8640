/**
 * `moveTo` for a managed session: the file follows its workspace to the new cwd's scope. So
 * that a crash loses nothing, the old file is flushed, the whole session is published in the
 * new scope (durable, no-replace) and its writer opened, and only then is the old one removed:
 * a crash leaves the old file, the new one, or both (a complete duplicate).
 */
import path from "node:path";

import type { BlobSink, SessionHeader } from "../session/index.js";
import { managedSessionTarget } from "../scope/session-defaults.js";
import { errorCodeOf } from "./errors.js";
import { serializeManagedLines } from "./lines.js";
import type { ResolvedOptions } from "./options.js";
import { removeLineIndex } from "./line-index.js";
import { SessionPersistence } from "./persistence.js";
import { persistenceTarget, type SessionState } from "./session-state.js";
import { markWritten } from "./state-writes.js";

function ignore(): void {}

/**
 * Moves `state` (managed, persisting) in place to the managed scope of `header.cwd`, with `header`.
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
    markWritten(state);
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
    options.logger.error("Session move left the previous file in place.", { path: oldFile, code: errorCodeOf(error), cause: error });
  }
  return moved;
}
