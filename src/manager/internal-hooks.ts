/** The manager's internal hooks, exported from no package entry: what the pi facade gets from `synchronousSwitches()`. */
import type { AppendedEntry, AppendOptions, BranchSummaryOptions, EntryDraft, SessionTree } from "../session/index.js";
import type { SessionStorage } from "../storage/index.js";
import type { SessionDestinationInput } from "./destination.js";
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
  /** `forkFrom`, synchronously, with the peer's {@link ForkChoices}. */
  forkFrom(sourcePath: string, cwd: string, destination: SessionDestinationInput, options: SessionManagerOptions, fork: ForkChoices): SessionManager;
  /** Closes the manager now, releasing its file for another manager of this process. @returns false, changing nothing, while queued work runs */
  releaseNow(manager: SessionManager): boolean;
}

/** A peer's fork choices: the header's `parentSession` (default the source's id), and writing the copy at once (write-through on). */
export interface ForkChoices {
  parentSession?: string;
  writeAtOnce?: boolean;
}
