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
