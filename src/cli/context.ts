/** What every command gets: where to write, how to style it, and the global options. */
import path from "node:path";

import { defaultAgentDir } from "../index.js";
import { styleFor, writeLines } from "./output.js";
import { jsonText } from "./printable.js";

/** Options every command accepts (defined on the program, usable after the command name). */
export interface GlobalOptions {
  readonly agentDir?: string;
  readonly verbose?: boolean;
}

/** The environment one command runs in. */
export type CliContext = Readonly<ReturnType<typeof cliContext>>;

/** Builds the context of a command from its merged global options. */
export function cliContext(options: GlobalOptions) {
  return {
    // Everything printed goes through these three: one sanitized line each, or one JSON document.
    out: (line = "") => writeLines(process.stdout, [line]),
    err: (line = "") => writeLines(process.stderr, [line]),
    json: (value: unknown) => process.stdout.write(`${jsonText(value)}\n`),
    style: styleFor(process.stdout),
    errStyle: styleFor(process.stderr),
    verbose: options.verbose === true,
    // `--agent-dir`, else the library's default (env, then `~/.gjc/agent`).
    agentDir: path.resolve(options.agentDir ?? defaultAgentDir()),
    agentDirGiven: options.agentDir !== undefined,
    // Progress bars go to stderr when it is a terminal.
    interactive: process.stderr.isTTY === true,
  };
}
