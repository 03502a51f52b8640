#!/usr/bin/env node
/** `gjc-session`: the command line over the public API; each command returns its exit status, failures print one line. */
import fs from "node:fs";
import { createRequire } from "node:module";

import { Command, CommanderError, InvalidArgumentError, Option } from "commander";

import { AUDIT_EXIT, runAudit } from "./audit-command.js";
import { cliContext, type CliContext, type GlobalOptions } from "./context.js";
import { runDemo } from "./demo-command.js";
import { CliError } from "./errors.js";
import { runHistory, type HistoryOptions } from "./history-command.js";
import { runMigrate } from "./migrate-command.js";
import { formatError, styleFor, writeLines } from "./output.js";
import { runContext, runList, runShow } from "./sessions-command.js";

/** The package's version, from the package.json two levels up (from `src/cli/` and `dist/cli/` alike). */
export const PACKAGE_VERSION = (createRequire(import.meta.url)("../../package.json") as { version: string }).version;

/** The query and `--cwd` of `history search`: in `search --cwd tokenizer` the word is the query, `--cwd` the current directory; `undefined`: no query. */
export function searchArguments(
  query: string | undefined,
  cwd: string | boolean | undefined,
): { query: string; cwd: string | boolean | undefined } | undefined {
  if (query !== undefined) return { query, cwd };
  return typeof cwd === "string" ? { query: cwd, cwd: true } : undefined;
}

/** Exit status of a usage error (unknown command or option, missing argument). */
export const EXIT_USAGE = 2;
/** Exit status of a failed command other than `audit` (which has its own, see AUDIT_EXIT). */
export const EXIT_FAILURE = 1;

function positiveInteger(value: string): number {
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n <= 0) throw new InvalidArgumentError("expected a positive integer");
  return n;
}

/**
 * A `--agent-dir` that does not exist is a mistake (a typo), not an empty store: `agent_dir_not_found`. The default agent
 * directory may be missing (nothing stored yet); `demo` makes the one it is given, `audit` reports its own.
 */
function requireGivenAgentDir(ctx: CliContext): void {
  if (ctx.agentDirGiven && fs.statSync(ctx.agentDir, { throwIfNoEntry: false }) === undefined) {
    throw new CliError("agent_dir_not_found", `no agent directory at ${ctx.agentDir} (--agent-dir)`);
  }
}

/** Commander's text as lines (it ends each message with a newline). */
function textLines(text: string): string[] {
  return text.replace(/\n$/, "").split("\n");
}

/** Builds the program; `run` wraps an action: context from the merged options, then the exit status or the one-line error. */
export function buildProgram(setExit: (code: number) => void): Command {
  const program = new Command("gjc-session")
    .description("Inspect, audit and migrate the owner-only session store of a coding agent.")
    .option("--agent-dir <dir>", "the agent directory (default: $GJC_CODING_AGENT_DIR, else ~/.gjc/agent)")
    .option("-v, --verbose", "explain errors in detail")
    .version(PACKAGE_VERSION, "-V, --version", "print the version")
    // Commander's help (which quotes the arguments) is sanitized like every other line; `main` prints usage errors in
    // the one error form.
    .configureOutput({
      writeOut: (text) => writeLines(process.stdout, textLines(text)),
      writeErr: (text) => writeLines(process.stderr, textLines(text)),
      outputError: () => {},
    })
    // Set before any subcommand is added: commander copies it into each one.
    .exitOverride();
  const run =
    <A extends unknown[]>(failureExit: number, action: (ctx: CliContext, ...args: A) => Promise<number> | number, agentDirMayBeMissing = false) =>
    async (...args: unknown[]): Promise<void> => {
      const command = args[args.length - 1] as Command;
      const globals = command.optsWithGlobals<GlobalOptions>();
      let ctx: CliContext | undefined;
      try {
        ctx = cliContext(globals);
        if (!agentDirMayBeMissing) requireGivenAgentDir(ctx);
        setExit(await action(ctx, ...(args.slice(0, -1) as A)));
      } catch (error) {
        // A usage error raised by an action goes to `main`, as commander's own do.
        if (error instanceof CommanderError) throw error;
        writeLines(process.stderr, formatError(error, globals.verbose === true, ctx?.errStyle ?? styleFor(process.stderr)));
        setExit(failureExit);
      }
    };

  program
    .command("demo")
    .description("walk through the store in a fresh temporary agent directory (or --agent-dir)")
    .action(run(EXIT_FAILURE, runDemo, true));
  program
    .command("audit")
    .description("check every object of the agent directory; exit 0 clean, 1 findings, 2 could not run")
    .option("--json", "print one JSON document (schema: AuditReportSchema)")
    .option("--fix", "repair modes and ACLs of objects you own in an agent directory (old modes saved to an undo file); refuse and report the rest")
    .action(run(AUDIT_EXIT.failed, runAudit, true));
  program
    .command("list")
    .description("list the sessions of a workspace (default: the current directory)")
    .option("--all", "list the sessions of every workspace")
    .option("--cwd <dir>", "the workspace to list")
    .option("--json", "print JSON")
    .action(run(EXIT_FAILURE, runList));
  program
    .command("show")
    .description("print a session's tree, with labels and the leaf marked")
    .argument("<session>", "a session id (or unique prefix) or a session file path")
    .option("--json", "print JSON: the header, every entry and the leaf")
    .action(run(EXIT_FAILURE, runShow));
  program
    .command("context")
    .description("print what the model sees when the session continues from its leaf")
    .argument("<session>", "a session id (or unique prefix) or a session file path")
    .option("--leaf <id>", "continue from this entry instead of the leaf")
    .option("--json", "print JSON")
    .action(run(EXIT_FAILURE, runContext));
  program
    .command("migrate")
    .description("copy this workspace's legacy-layout sessions into its v2 scope (sources are kept)")
    .option("--dry-run", "only list what would be migrated")
    .option("--cwd <dir>", "the workspace (default: the current directory; one that no longer exists: into the scope of the path it had)")
    .addOption(new Option("--all", "every workspace's legacy sessions below the agent directory").conflicts("cwd"))
    .action(run(EXIT_FAILURE, runMigrate));

  const history = program.command("history").description("search and show the prompt history");
  const historyCommand = (name: string, description: string, limit: string) =>
    history
      .command(name)
      .description(description)
      .option("--cwd [dir]", "only prompts typed in this directory (default: the current one)")
      .option("--limit <n>", limit, positiveInteger)
      .option("--json", "print JSON");
  const search = historyCommand("search", "prompts matching a query, newest first", "at most this many results").argument(
    "[query]",
    "words to look for (prefixes and substrings match)",
  );
  search.action(
    run(EXIT_FAILURE, (ctx, query: string | undefined, opts: HistoryOptions) => {
      const parsed = searchArguments(query, opts.cwd);
      if (parsed === undefined) return search.error("error: missing required argument 'query'", { exitCode: EXIT_USAGE, code: "commander.missingArgument" });
      return runHistory(ctx, parsed.query, { ...opts, cwd: parsed.cwd });
    }),
  );
  historyCommand("recent", "the newest prompts", "how many (default 20)").action(
    run(EXIT_FAILURE, (ctx, opts: HistoryOptions) => runHistory(ctx, undefined, opts)),
  );
  return program;
}

/** Commander's codes whose output (help) is already printed: no error line follows. */
const HELP_CODES: ReadonlySet<string> = new Set(["commander.help", "commander.helpDisplayed", "commander.version"]);

/** Runs the CLI on `argv` (as `process.argv`) and resolves to the exit status. */
export async function main(argv: readonly string[]): Promise<number> {
  let status = 0;
  const program = buildProgram((code) => (status = code));
  try {
    await program.parseAsync([...argv]);
  } catch (error) {
    if (error instanceof CommanderError) {
      if (error.exitCode === 0) return 0;
      if (!HELP_CODES.has(error.code)) {
        const usage = new CliError("usage", `${error.message.replace(/^error: /, "")} (add --help for usage)`, { cause: error });
        writeLines(process.stderr, formatError(usage, argv.includes("--verbose"), styleFor(process.stderr)));
      }
      return EXIT_USAGE;
    }
    throw error;
  }
  return status;
}

// A reader that stops early (`| head`) closes the pipe: the output is no longer wanted, which is no failure.
for (const stream of [process.stdout, process.stderr]) {
  stream.on("error", (error: NodeJS.ErrnoException) => {
    if (error.code !== "EPIPE") throw error;
    process.exit(process.exitCode ?? 0);
  });
}

// Node 22's notice that node:sqlite is experimental would land in every history command's output:
// the CLI process drops that one warning (a library importer keeps Node's default).
const emitWarning = process.emitWarning.bind(process);
process.emitWarning = ((warning: string | Error, ...rest: unknown[]) => {
  const text = typeof warning === "string" ? warning : warning.message;
  const type =
    typeof rest[0] === "string" ? rest[0] : ((rest[0] as { type?: string } | undefined)?.type ?? (warning instanceof Error ? warning.name : undefined));
  if (type === "ExperimentalWarning" && text.startsWith("SQLite is an experimental feature")) return;
  (emitWarning as (...args: unknown[]) => void)(warning, ...rest);
}) as typeof process.emitWarning;

main(process.argv).then(
  (status) => {
    process.exitCode = status;
  },
  (error: unknown) => {
    writeLines(process.stderr, formatError(error, process.argv.includes("--verbose"), styleFor(process.stderr)));
    process.exitCode = EXIT_FAILURE;
  },
);
