/**
 * The read path GJC's app takes through its private `session-manager-internal` module: a
 * three-method view of a manager's current session. GJC keys it by a Symbol only its own
 * session-manager module can reach, which no library can define; here it is a documented
 * capability instead, {@link sessionReadAccess}, and the module's three helpers keep their
 * names so that module becomes one re-export line (README, "The adoption patch").
 */
import type { FileEntry, SessionContext, SessionTreeNode } from "../session/index.js";
import type { SessionManager } from "./session-manager.js";

/** What {@link sessionReadAccess} gives: the current session's entries, context and tree, for reading only. */
export interface SessionManagerReadAccess {
  /** Every entry but the header, in file order, blob references resolved: as {@link SessionManager.getEntries}. */
  getEntries(): readonly FileEntry[];
  /** The context at the current leaf, its messages linked to their entries (namespace: the session id); the same object until the session changes. */
  getSessionContext(): Readonly<SessionContext>;
  /** The tree, as {@link SessionManager.getTree}. */
  getTree(): SessionTreeNode[];
}

const views = new WeakMap<SessionManager, SessionManagerReadAccess>();

/**
 * The read view of `manager`: one object per manager, whose calls read the session the manager
 * is on at the time (they follow switches, commits and rollbacks). The context is rebuilt only
 * when the session's entries, leaf or in-place payloads changed (the manager's revision
 * counters, which every switch moves too), so a caller polling it on every render pays once per
 * change. What it returns is for reading; the context is shared by the calls until the next change.
 */
export function sessionReadAccess(manager: SessionManager): SessionManagerReadAccess {
  let view = views.get(manager);
  if (view === undefined) {
    let cached: { key: string; context: SessionContext } | undefined;
    view = Object.freeze({
      getEntries: () => manager.getEntries(),
      getSessionContext: () => {
        const { entry, leaf, replayMetadata } = manager.revisionSnapshot();
        const key = `${manager.getSessionId()}:${entry}:${leaf}:${replayMetadata}`;
        if (cached?.key !== key) {
          // The manager's context comes linked to its entries already.
          cached = { key, context: manager.buildSessionContext() };
        }
        return cached.context;
      },
      getTree: () => manager.getTree(),
    });
    views.set(manager, view);
  }
  return view;
}

/** GJC's `getEntriesForInternalRead`: {@link SessionManagerReadAccess.getEntries} of `manager`. */
export function getEntriesForInternalRead(manager: SessionManager): readonly FileEntry[] {
  return sessionReadAccess(manager).getEntries();
}

/** GJC's `getSessionContextForInternalRead`: {@link SessionManagerReadAccess.getSessionContext} of `manager`. */
export function getSessionContextForInternalRead(manager: SessionManager): Readonly<SessionContext> {
  return sessionReadAccess(manager).getSessionContext();
}

/** GJC's `getTreeForInternalRead`: {@link SessionManagerReadAccess.getTree} of `manager`. */
export function getTreeForInternalRead(manager: SessionManager): SessionTreeNode[] {
  return sessionReadAccess(manager).getTree();
}
