/** What every command gets: where to write, how to style it, and the global options. */
import path from "node:path";

import { defaultAgentDir } from "../index.js";
import { styleFor, type Style } from "./output.js";

/** Options every command accepts (defined on the program, usable after the command name). */
export interface GlobalOptions {
  readonly agentDir?: string;
  readonly verbose?: boolean;
}

/** The environment one command runs in. */
export interface CliContext {
  readonly out: (line?: string) => void;
  readonly err: (line?: string) => void;
  readonly style: Style;
  readonly errStyle: Style;
  readonly verbose: boolean;
  /** The agent directory: `--agent-dir`, else the library's default (env, then `~/.gjc/agent`). */
  readonly agentDir: string;
  /** True when `--agent-dir` was given. */
  readonly agentDirGiven: boolean;
  /** True when stderr is a terminal (progress bars go there). */
  readonly interactive: boolean;
}

/** Builds the context of a command from its merged global options. */
export function cliContext(options: GlobalOptions): CliContext {
  return {
    out: (line = "") => process.stdout.write(`${line}\n`),
    err: (line = "") => process.stderr.write(`${line}\n`),
    style: styleFor(process.stdout),
    errStyle: styleFor(process.stderr),
    verbose: options.verbose === true,
    agentDir: path.resolve(options.agentDir ?? defaultAgentDir()),
    agentDirGiven: options.agentDir !== undefined,
    interactive: process.stderr.isTTY === true,
  };
}
