/** Where the agent directory is by default: a leaf module, so `history/` finds it without loading scope resolution. */
import os from "node:os";
import path from "node:path";

/** Environment variables that name the agent directory, strongest first. */
const AGENT_DIR_ENV = ["GJC_CODING_AGENT_DIR", "PI_CODING_AGENT_DIR"] as const;

/** Environment variable that renames the `.gjc` config directory under the home directory. */
const CONFIG_DIR_ENV = "GJC_CONFIG_DIR";

/** The default agent directory: `$GJC_CODING_AGENT_DIR`, else `$PI_CODING_AGENT_DIR`, else `~/<$GJC_CONFIG_DIR or .gjc>/agent`. */
export function defaultAgentDir(env: NodeJS.ProcessEnv = process.env, home: string = os.homedir()): string {
  for (const name of AGENT_DIR_ENV) {
    const value = env[name];
    if (value !== undefined && value.length > 0) return path.resolve(value);
  }
  const config = env[CONFIG_DIR_ENV];
  return path.resolve(home, config !== undefined && config.length > 0 ? config : ".gjc", "agent");
}
