/**
 * The entry points every plant case calls, in order, on one prepared agent dir (shared by
 * the plant test and the child process that runs them).
 */
import * as ops from "./ops.js";

/** One prepared agent dir of a plant case and the workspaces and files its entries use. */
export interface PlantGroup {
  readonly id: string;
  readonly agentDir: string;
  /** The workspace whose scope, session, legacy session and staging were seeded. */
  readonly cwd: string;
  /** A workspace without a scope yet (scope creation). */
  readonly newCwd: string;
  readonly sessionFile: string;
  readonly legacyFile: string;
  /** Indices into {@link ENTRIES} of the entry points to run, in order. */
  readonly entries: readonly number[];
}

/** Name and call of each entry point. */
export const ENTRIES: ReadonlyArray<readonly [string, (g: PlantGroup) => Promise<ops.OpOutcome>]> = [
  ["create in the existing scope", (g) => ops.createAndWrite(g.agentDir, g.cwd)],
  ["create with a new scope", (g) => ops.createAndWrite(g.agentDir, g.newCwd)],
  ["open + append", (g) => ops.openAndAppend(g.agentDir, g.sessionFile)],
  ["continueRecent", (g) => ops.continueRecent(g.agentDir, g.cwd)],
  ["list", (g) => ops.list(g.agentDir, g.cwd)],
  ["listAll", (g) => ops.listAll(g.agentDir)],
  ["history add", (g) => ops.historyAdd(g.agentDir, "plant prompt")],
  ["history search", (g) => ops.historySearch(g.agentDir, "racemark")],
  ["staging cleanup (migrating again)", (g) => ops.cleanupStaging(g.agentDir, g.cwd, g.legacyFile)],
  ["migrate", (g) => ops.migrate(g.agentDir, g.cwd)],
  ["audit", (g) => ops.audit(g.agentDir)],
];

/** The entry points that use each managed path (by its `ManagedPath` label); the rest run on all. */
const USES: Readonly<Record<string, readonly string[]>> = (() => {
  const scope = ["create in the existing scope", "open + append", "continueRecent", "list", "listAll", "staging cleanup (migrating again)", "migrate", "audit"];
  const blobs = ["create in the existing scope", "create with a new scope", "open + append", "audit"];
  const terminals = ["create in the existing scope", "create with a new scope", "continueRecent", "audit"];
  const history = ["history add", "history search", "audit"];
  const legacy = ["list", "listAll", "staging cleanup (migrating again)", "migrate", "audit"];
  const migration = ["staging cleanup (migrating again)", "migrate", "audit"];
  return {
    "scope dir": scope,
    "binding file": scope,
    "session file": ["create in the existing scope", "open + append", "continueRecent", "list", "listAll", "audit"],
    "blobs/": blobs,
    blob: blobs,
    "terminal-sessions/": terminals,
    breadcrumb: terminals,
    "history.db": history,
    "history.db-wal": history,
    "history.db-shm": history,
    "legacy dir": legacy,
    "legacy file": legacy,
    "migration lock": migration,
    "staging dir": migration,
    "staging file": migration,
  };
})();

/** Indices of the entry points that use the managed path `label`. */
export function entriesUsing(label: string): number[] {
  const names = USES[label];
  return ENTRIES.flatMap(([name], i) => (names === undefined || names.includes(name) ? [i] : []));
}
