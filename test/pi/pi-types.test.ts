/**
 * `gjc-session-store/pi` as a TypeScript drop-in for pi: code written against pi-ai's message types (interfaces
 * without index signatures) and pi's own `CustomMessage` / `BashExecutionMessage` compiles against the built
 * declarations with `strict` and without `skipLibCheck`. pi-ai's types come from a fixture of ours
 * (test/fixtures/pi-ai-types), installed as `@mariozechner/pi-ai` in a scratch project.
 */
import fs from "node:fs";
import path from "node:path";

import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { REPO_ROOT, run } from "../helpers/processes.js";
import { makeTempDir } from "../helpers/temp.js";

const TSC = path.join(REPO_ROOT, "node_modules", "typescript", "bin", "tsc");

const PI_CONSUMER = `import type { AgentMessage } from "@mariozechner/pi-agent-core";
import type { AssistantMessage, ImageContent, Message, TextContent, ToolResultMessage, UserMessage } from "@mariozechner/pi-ai";
import { buildSessionContext, SessionManager, type SessionContext, type SessionEntry } from "gjc-session-store/pi";

/** pi's own message types (pi-coding-agent's messages.d.ts), as pi declares them. */
interface BashExecutionMessage {
  role: "bashExecution";
  command: string;
  output: string;
  exitCode: number | undefined;
  cancelled: boolean;
  truncated: boolean;
  fullOutputPath?: string;
  timestamp: number;
  excludeFromContext?: boolean;
}
interface CustomMessage<T = unknown> {
  role: "custom";
  customType: string;
  content: string | (TextContent | ImageContent)[];
  display: boolean;
  details?: T;
  timestamp: number;
}
interface BranchSummaryMessage {
  role: "branchSummary";
  summary: string;
  fromId: string;
  timestamp: number;
}
interface CompactionSummaryMessage {
  role: "compactionSummary";
  summary: string;
  tokensBefore: number;
  timestamp: number;
}

/** pi-coding-agent's roles, merged into pi-agent-core's AgentMessage as pi merges them. */
declare module "@mariozechner/pi-agent-core" {
  interface CustomAgentMessages {
    bashExecution: BashExecutionMessage;
    custom: CustomMessage;
    branchSummary: BranchSummaryMessage;
    compactionSummary: CompactionSummaryMessage;
  }
}

/** What pi's agent session does with each message it persists. */
export function persist(session: SessionManager, message: Message | CustomMessage | BashExecutionMessage): string {
  return session.appendMessage(message);
}

export function turn(session: SessionManager, prompt: UserMessage, reply: AssistantMessage, result: ToolResultMessage, bash: BashExecutionMessage): string[] {
  const content: (TextContent | ImageContent)[] = [{ type: "text", text: "note" }];
  return [
    session.appendMessage(prompt),
    session.appendMessage(reply),
    session.appendMessage(result),
    session.appendMessage(bash),
    session.appendCustomMessageEntry("note", content, true, { from: "extension" }),
  ];
}

export function context(session: SessionManager): number {
  const built: SessionContext = session.buildSessionContext();
  return built.messages.length;
}

/** What pi does with the context: the agent's state takes it as AgentMessage[]. */
export function resume(session: SessionManager, agent: { messages: AgentMessage[]; model?: { provider: string; modelId: string } }): void {
  const built = session.buildSessionContext();
  agent.messages = built.messages;
  if (built.model !== null) agent.model = built.model;
}

export function rebuild(entries: SessionEntry[], leafId: string | null): AgentMessage[] {
  const messages: AgentMessage[] = buildSessionContext(entries, leafId).messages;
  for (const message of messages) {
    if (message.role === "assistant") message.content.filter((block) => block.type === "toolCall").map((call) => call.name);
  }
  return messages;
}
`;

let project: { path: string; remove(): void };

beforeAll(() => {
  project = makeTempDir("gjc-pi-types-");
  const modules = path.join(project.path, "node_modules");
  fs.mkdirSync(path.join(modules, "@mariozechner"), { recursive: true });
  fs.symlinkSync(REPO_ROOT, path.join(modules, "gjc-session-store"), "dir");
  fs.cpSync(path.join(REPO_ROOT, "test", "fixtures", "pi-ai-types"), path.join(modules, "@mariozechner", "pi-ai"), { recursive: true });
  fs.cpSync(path.join(REPO_ROOT, "test", "fixtures", "pi-agent-core-types"), path.join(modules, "@mariozechner", "pi-agent-core"), { recursive: true });
  fs.writeFileSync(path.join(project.path, "consumer.ts"), PI_CONSUMER);
  const compilerOptions = {
    strict: true,
    module: "NodeNext",
    moduleResolution: "NodeNext",
    target: "ES2022",
    noEmit: true,
    types: ["node"],
    typeRoots: [path.join(REPO_ROOT, "node_modules", "@types")],
  };
  fs.writeFileSync(path.join(project.path, "tsconfig.json"), JSON.stringify({ compilerOptions, include: ["consumer.ts"] }));
});
afterAll(() => project.remove());

describe("gjc-session-store/pi types", () => {
  it("accept pi-ai's and pi's message types, and give back pi-agent-core's AgentMessage[] (strict, no skipLibCheck)", () => {
    expect(fs.existsSync(path.join(REPO_ROOT, "dist", "pi", "index.d.ts")), "npm run build first").toBe(true);
    const compiled = run(process.execPath, [TSC, "-p", "tsconfig.json"], { cwd: project.path, timeout: 300_000 });
    expect(compiled.stdout + compiled.stderr).toBe("");
    expect(compiled.status).toBe(0);
  });
});
