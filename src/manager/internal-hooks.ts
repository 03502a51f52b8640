/** The manager's internal hooks, exported from no package entry: what the pi facade gets from `synchronousSwitches()`. */
import type { AppendedEntry, AppendOptions, BranchSummaryOptions, EntryDraft, SessionTree } from "../session/index.js";
import type { SessionStorage } from "../storage/index.js";
import type { Policies, SessionDestinationInput } from "./destination.js";
import type { NewSessionOptions, OpenSessionOptions, SessionManagerOptions } from "./options.js";

/** Synchronous `open`, `newSession` and `setSessionFile` on the same load path, and the reach-ins of a facade whose callers do not await. */
export interface SynchronousSwitches<SessionManager> {
  open(filePath: string, destination?: SessionDestinationInput, storage?: SessionStorage, options?: OpenSessionOptions): SessionManager;
  newSession(manager: SessionManager, options?: NewSessionOptions): string | undefined;
  setSessionFile(manager: SessionManager, sessionFile: string): void;
  /** Appends `draft` (an entry in a peer's shape) through the manager's one append path. */
  append<D extends EntryDraft>(manager: SessionManager, draft: D, options?: AppendOptions): AppendedEntry<D>;
  /** The live tree of the session the manager is on now: for reading, never for changing. */
  tree(manager: SessionManager): SessionTree;
  /** Makes the manager a facade's, as pi's: first writes done before the append returns, and a fresh session that replaced a file (blank or moved aside) written now. */
  adopt(manager: SessionManager): void;
  /** `branchWithSummary` with every option of the tree's (pi's `fromHook` among them). */
  branchWithSummary(manager: SessionManager, branchFromId: string | null, summary: string, options: BranchSummaryOptions): string;
  /** `forkFrom`, synchronously, with the peer's {@link ForkChoices} (and the factory's storage and policies, when it has them). */
  forkFrom(
    sourcePath: string,
    cwd: string,
    destination: SessionDestinationInput,
    options: SessionManagerOptions,
    fork: ForkChoices,
    storage?: SessionStorage,
    policies?: Policies,
  ): SessionManager;
  /** Closes the manager now, releasing its file for another manager of this process. @returns false, changing nothing, while queued work runs */
  releaseNow(manager: SessionManager): boolean;
  /**
   * A second manager on the session `manager` would switch to (a new one, root..`leafId` of it, or a copy of it) while
   * `manager` stays on its own: nothing is written until {@link publish}. @throws SessionTreeError `unknown_entry`
   */
  successor(manager: SessionManager, plan: SuccessorPlan): SessionManager;
  /** Writes a successor's whole session now (durable, no-replace) and keeps its writer. @throws SessionManagerError `persistence_failed` */
  publish(manager: SessionManager): void;
  /** Closes the manager without the rewrite a migrated file still owes (the file stays as read). */
  closeAsRead(manager: SessionManager): Promise<void>;
  /** Throws the manager's latched persistence failure, if any (an append that failed returns normally; the next call throws). */
  checkPersisted(manager: SessionManager): void;
}

/** What {@link SynchronousSwitches.successor} builds. */
export type SuccessorPlan =
  { kind: "new"; parentSession?: string | undefined; id?: string | undefined } | { kind: "branched"; leafId: string } | { kind: "forked" };

/** A peer's fork choices: the header's `parentSession` (default the source's id), the copy's session id (default a new one), and writing the copy at once (write-through on). */
export interface ForkChoices {
  parentSession?: string;
  id?: string;
  writeAtOnce?: boolean;
}
