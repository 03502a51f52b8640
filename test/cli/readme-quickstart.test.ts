// The README's quick start runs as written: its first code block, saved as a module inside
// the package (so `import "gjc-session-store"` resolves to this package's built entry) and
// run with a fresh HOME, exits 0 and leaves one session in the managed scope.
import fs from "node:fs";
import path from "node:path";

import { afterEach, beforeEach, describe, expect, it } from "vitest";

import { REPO_ROOT, run } from "../helpers/processes.js";
import { makeTempDir } from "../helpers/temp.js";

let home: ReturnType<typeof makeTempDir>;
let script: string;

beforeEach(() => {
  home = makeTempDir("gjc-quickstart-");
  script = path.join(REPO_ROOT, `.readme-quickstart-${process.pid}.mjs`);
});
afterEach(() => {
  fs.rmSync(script, { force: true });
  home.remove();
});

describe("README quick start", () => {
  it("runs as written and leaves one session in the workspace's managed scope", () => {
    const readme = fs.readFileSync(path.join(REPO_ROOT, "README.md"), "utf8");
    const block = /## Using it\n+```ts\n([\s\S]*?)```/.exec(readme)?.[1];
    expect(block, "the README has a ts block under 'Using it'").toBeDefined();
    fs.writeFileSync(script, `${block}\nawait resumed.close();\nconsole.log(JSON.stringify({ messages: messages.length, file: resumed.getSessionFile() }));\n`);
    const workspace = path.join(home.path, "work");
    fs.mkdirSync(workspace);
    const env = { ...process.env, HOME: home.path, GJC_CODING_AGENT_DIR: "", PI_CODING_AGENT_DIR: "", GJC_CONFIG_DIR: "" };
    const result = run(process.execPath, [script], { cwd: workspace, env });
    expect(result.status, result.stderr).toBe(0);
    const out = JSON.parse(result.stdout.trim().split("\n").pop() ?? "{}") as { messages: number; file: string };
    expect(out.messages).toBe(2);
    expect(out.file.startsWith(path.join(fs.realpathSync(home.path), ".gjc", "agent", "sessions", "v2-"))).toBe(true);
  });
});
