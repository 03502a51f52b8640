/** `gjc-session migrate`: copies the workspace's legacy sessions into its v2 scope (sources kept), with a progress bar on a terminal. */
import path from "node:path";

import {
  listSessionCandidates, openCandidateForWrite, resolveManagedScope, type CandidateListing, type ManagedScope,
  type MigrationProgress, type SessionCandidate,
} from "../index.js";
import type { CliContext } from "./context.js";
import { CliError } from "./errors.js";
import { plural, table, terminalLine } from "./output.js";

/** One migrated (or, in a dry run, migratable) session. */
interface MigrateOutcome {
  readonly source: string;
  readonly destination?: string;
  readonly error?: string;
}

const BAR_WIDTH = 24;

/** A one-line progress bar redrawn in place on a terminal. */
function progressLine(label: string, progress: MigrationProgress): string {
  const total = Math.max(progress.bytesTotal, 1);
  const fraction = progress.phase === "done" ? 1 : Math.min(progress.bytesDone / total, 1);
  const filled = Math.round(fraction * BAR_WIDTH);
  const percent = String(Math.round(fraction * 100)).padStart(3);
  return `${label} [${"#".repeat(filled)}${"-".repeat(BAR_WIDTH - filled)}] ${percent}%  ${progress.filesDone}/${progress.filesTotal} files  ${progress.phase}`;
}

/** Resolves the scope of `cwd` (for writing unless `dryRun`), or throws the scope's code. */
export function scopeFor(ctx: CliContext, cwd: string, mode: "read" | "write"): ManagedScope {
  const resolution = resolveManagedScope({ cwd: path.resolve(cwd), agentDir: ctx.agentDir, mode });
  if (resolution.kind === "error") throw new CliError("scope_unavailable", `${resolution.code}: ${resolution.message}`);
  return resolution.scope;
}

/** The workspace's candidate listing and its legacy sessions not migrated yet, or the scope's code. */
export async function legacyCandidates(scope: ManagedScope): Promise<{ listing: CandidateListing; candidates: SessionCandidate[] }> {
  const listing = await listSessionCandidates(scope);
  if (listing.kind === "error") throw new CliError("scope_unavailable", `${listing.code}: ${listing.message}`);
  return { listing, candidates: listing.candidates.filter((c) => c.migrationState === "legacy_unmigrated") };
}

/** Migrates every legacy candidate of `scope`, drawing progress on a terminal. */
export async function migrateAll(ctx: CliContext, scope: ManagedScope, candidates: readonly SessionCandidate[]): Promise<MigrateOutcome[]> {
  const outcomes: MigrateOutcome[] = [];
  for (const [i, candidate] of candidates.entries()) {
    const label = `(${i + 1}/${candidates.length}) ${path.basename(candidate.path)}`;
    const draw = (progress: MigrationProgress): void => {
      if (ctx.interactive) process.stderr.write(`\r\u001b[2K${terminalLine(progressLine(label, progress))}`);
    };
    const result = await openCandidateForWrite(scope, candidate, { onProgress: draw });
    if (ctx.interactive) process.stderr.write("\n");
    if (result.kind === "error") outcomes.push({ source: candidate.path, error: `${result.code}: ${result.message}` });
    else outcomes.push({ source: candidate.path, destination: result.path });
  }
  return outcomes;
}

/** The `migrate` command; exit status 1 when any session could not be migrated. */
export async function runMigrate(ctx: CliContext, options: { readonly dryRun?: boolean; readonly cwd?: string }): Promise<number> {
  const cwd = options.cwd ?? process.cwd();
  const dryRun = options.dryRun === true;
  const scope = scopeFor(ctx, cwd, dryRun ? "read" : "write");
  const { listing, candidates } = await legacyCandidates(scope);
  const { style } = ctx;
  // What cannot be migrated (a header without a cwd, an unreadable folder) is named with its code.
  for (const passed of [...listing.invalid, ...listing.scanErrors]) {
    const why = passed.code === "invalid_header" ? " (a header without a session id or cwd names no workspace)" : "";
    ctx.out(style.yellow(`not migrated ${passed.path}: ${passed.code}${why}`));
  }
  if (candidates.length === 0) {
    ctx.out(style.dim(`no legacy sessions to migrate for ${scope.canonicalCwd}`));
    return 0;
  }
  if (dryRun) {
    ctx.out(`${style.bold("Would migrate")} ${plural(candidates.length, "legacy session")} into ${scope.directoryPath}:`);
    for (const c of candidates) ctx.out(`  ${c.path}`);
    return 0;
  }
  const outcomes = await migrateAll(ctx, scope, candidates);
  const rows = outcomes.map((o) =>
    o.error === undefined ? [style.green("migrated"), o.source, `→ ${o.destination}`] : [style.red("failed"), o.source, o.error],
  );
  for (const line of table(rows)) ctx.out(line);
  return outcomes.every((o) => o.error === undefined) ? 0 : 1;
}
