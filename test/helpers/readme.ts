/**
 * The README as test input: its error-code table, its sections, and its TypeScript snippets
 * compiled against the built package and run in a fresh home directory, so the tests that
 * hold the documentation to the code share one reading of it.
 */
import fs from "node:fs";
import path from "node:path";

import { REPO_ROOT, run, type ChildResult } from "./processes.js";

/** The README's text. */
export function readmeText(): string {
  return fs.readFileSync(path.join(REPO_ROOT, "README.md"), "utf8");
}

/**
 * The body of the section whose heading line is exactly `heading` (e.g. `"## Error codes"`),
 * up to the next heading of the same or a higher level; `undefined` when there is none.
 */
export function readmeSection(heading: string): string | undefined {
  const readme = readmeText();
  const start = readme.indexOf(`\n${heading}\n`);
  if (start === -1) return undefined;
  const level = /^#+/.exec(heading)?.[0].length ?? 2;
  const rest = readme.slice(start + heading.length + 2);
  const end = rest.search(new RegExp(`\\n#{1,${level}} `));
  return end === -1 ? rest : rest.slice(0, end);
}

/** One row of the README's error-code table. */
export interface ErrorCodeRow {
  readonly code: string;
  /** The error classes named in the row's second column. */
  readonly classes: readonly string[];
  readonly meaning: string;
}

/** The rows of the `## Error codes` table (`| \`code\` | \`Class\`, ... | meaning |`); `undefined` without the section. */
export function readmeErrorTable(): ErrorCodeRow[] | undefined {
  const section = readmeSection("## Error codes");
  if (section === undefined) return undefined;
  return [...section.matchAll(/^\| `([a-z0-9_]+)` \| ([^|]*) \| (.*) \|$/gm)].map((m) => ({
    code: m[1] as string,
    classes: [...(m[2] as string).matchAll(/`([A-Za-z]+)`/g)].map((c) => c[1] as string),
    meaning: (m[3] as string).trim(),
  }));
}

/** A fenced code block of the README. */
export interface Snippet {
  /** The info string after the opening fence (`ts`, `sh`, ...). */
  readonly lang: string;
  /** 1-based line of the opening fence. */
  readonly line: number;
  readonly code: string;
}

/** Every fenced block of the README, in order. */
export function readmeBlocks(): Snippet[] {
  const lines = readmeText().split("\n");
  const blocks: Snippet[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\S*)\s*$/.exec(lines[i] as string);
    if (open === null) continue;
    const body: string[] = [];
    let j = i + 1;
    while (j < lines.length && lines[j] !== "```") body.push(lines[j++] as string);
    if (j === lines.length) throw new Error(`README.md:${i + 1}: unterminated code block`);
    blocks.push({ lang: open[1] as string, line: i + 1, code: `${body.join("\n")}\n` });
    i = j;
  }
  return blocks;
}

/** The TypeScript blocks of the README (`ts` or `typescript`), in order. */
export function readmeTsSnippets(): Snippet[] {
  return readmeBlocks().filter((b) => b.lang === "ts" || b.lang === "typescript");
}

/** Snippets compiled into a directory inside the package, ready to run. */
export interface CompiledSnippets {
  /** tsc's exit status and output (diagnostics name `README.md:<line>`). */
  readonly compile: ChildResult;
  /** The compiled module of each snippet, in the order given. */
  readonly scripts: readonly string[];
  /** Deletes the directory. */
  remove(): void;
}

/**
 * Writes each snippet as its own module into a fresh directory inside the repository (so
 * `import "gjc-session-store"` resolves to this package's built entry by its own name, types
 * from `dist/`) and compiles them with tsc, strict, as a consumer would.
 */
export function compileSnippets(snippets: readonly Snippet[]): CompiledSnippets {
  const dir = fs.mkdtempSync(path.join(REPO_ROOT, ".readme-snippets-"));
  const names = snippets.map((s) => `readme-line-${String(s.line).padStart(4, "0")}`);
  snippets.forEach((s, i) => fs.writeFileSync(path.join(dir, `${names[i]}.ts`), s.code));
  const tsconfig = {
    compilerOptions: {
      target: "ES2022",
      module: "NodeNext",
      moduleResolution: "NodeNext",
      lib: ["ES2023"],
      types: ["node"],
      strict: true,
      noUncheckedIndexedAccess: true,
      skipLibCheck: true,
      outDir: "out",
      rootDir: ".",
    },
    files: names.map((n) => `${n}.ts`),
  };
  fs.writeFileSync(path.join(dir, "tsconfig.json"), JSON.stringify(tsconfig));
  const tsc = path.join(REPO_ROOT, "node_modules", "typescript", "bin", "tsc");
  const result = run(process.execPath, [tsc, "-p", dir, "--pretty", "false"], { cwd: dir });
  const toReadme = (text: string) =>
    text.replace(
      /readme-line-(\d{4})\.ts\((\d+),(\d+)\)/g,
      (_m, fence: string, line: string, col: string) => `README.md:${Number(fence) + Number(line)}:${col}`,
    );
  return {
    compile: { ...result, stdout: toReadme(result.stdout), stderr: toReadme(result.stderr) },
    scripts: names.map((n) => path.join(dir, "out", `${n}.js`)),
    remove: () => fs.rmSync(dir, { recursive: true, force: true }),
  };
}

// Variables that would point the store somewhere else than the fresh home, or name a terminal.
const FOREIGN_ENV = ["GJC_CODING_AGENT_DIR", "PI_CODING_AGENT_DIR", "GJC_CONFIG_DIR", "TMUX", "TMUX_PANE", "KITTY_WINDOW_ID", "TERM_SESSION_ID", "WT_SESSION"];

/**
 * The environment of a snippet run: this process's, with `HOME` set, temporary files below it
 * (so what a snippet leaves goes with the home) and nothing redirecting the store.
 */
export function snippetEnv(home: string): NodeJS.ProcessEnv {
  const tmp = path.join(home, "tmp");
  fs.mkdirSync(tmp, { recursive: true, mode: 0o700 });
  const env: NodeJS.ProcessEnv = { ...process.env, HOME: home, TMPDIR: tmp };
  for (const name of FOREIGN_ENV) delete env[name];
  return env;
}

/** Runs one compiled snippet with node in `cwd`, stdin closed (no terminal to detect). */
export function runSnippet(script: string, cwd: string, home: string): ChildResult {
  return run(process.execPath, [script], { cwd, env: snippetEnv(home), stdio: ["ignore", "pipe", "pipe"] });
}
