/** `gjc-session demo`: the whole store at work in a fresh agent directory, through the public API only. */
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

import {
  HISTORY_DB_NAME,
  auditAgentDir,
  BlobStore,
  buildSessionContext,
  HistoryStorage,
  legacyDirectoryNames,
  listSessions,
  ManagedSessionStorage,
  SecureDir,
  SessionManager,
  type AgentMessage,
} from "../index.js";
import { formatAuditReport } from "./audit-command.js";
import type { CliContext } from "./context.js";
import { legacyCandidates, migrateAll, scopeFor } from "./migrate-command.js";
import { oneLine, table } from "./output.js";
import { describeMessage, renderTree } from "./render.js";

const user = (text: string): AgentMessage => ({ role: "user", content: [{ type: "text", text }], timestamp: Date.now() }) as AgentMessage;
const assistant = (text: string): AgentMessage =>
  ({ role: "assistant", provider: "demo", model: "demo-model", content: [{ type: "text", text }], timestamp: Date.now() }) as AgentMessage;

/** Runs the walk-through in `--agent-dir` (kept), else in a fresh temporary directory removed at the end; exit status 0 when the final audit is clean. */
export async function runDemo(ctx: CliContext): Promise<number> {
  if (ctx.agentDirGiven) return walkThrough(ctx, ctx.agentDir);
  const temporary = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "gjc-demo-")));
  try {
    return await walkThrough(ctx, temporary);
  } finally {
    fs.rmSync(temporary, { recursive: true, force: true });
    ctx.out(ctx.style.dim(`removed ${temporary} (\`gjc-session demo --agent-dir DIR\` keeps what it writes)`));
  }
}

async function walkThrough(ctx: CliContext, agentDir: string): Promise<number> {
  const { style } = ctx;
  // Made owner-only when missing; an existing directory must already be owner-only.
  SecureDir.openRoot(agentDir, { create: true }).close();
  const step = (title: string) => {
    ctx.out();
    ctx.out(style.bold(style.cyan(`== ${title}`)));
  };
  const demoCtx: CliContext = { ...ctx, agentDir };
  ctx.out(`${style.bold("gjc-session demo")} in ${agentDir}`);

  step("1. Managed scope of the current directory");
  const scope = scopeFor(demoCtx, process.cwd(), "write");
  for (const line of table([
    ["workspace", scope.canonicalCwd],
    ["scope", scope.directoryName],
    ["directory", scope.directoryPath],
  ]))
    ctx.out(`  ${line}`);

  step("2. A session: messages, a branch, a compaction, a label, an image");
  const storage = ManagedSessionStorage.open(agentDir);
  const blobStore = new BlobStore(path.join(agentDir, "blobs"));
  const extras = { blobStore, agentDir, terminalId: null } as const;
  const session = SessionManager.create(scope.canonicalCwd, scope.directoryPath, storage, extras);
  const ask = session.appendMessage(user("Summarise the tokenizer module."));
  const answer = session.appendMessage(assistant("It splits input on whitespace and punctuation."));
  session.appendMessage(user("And the error handling?"));
  session.appendMessage(assistant("Errors carry a stable code."));
  session.branch(answer); // a second line of thought from the first answer
  session.appendMessage(user("Show me the diagram instead."));
  const image = randomBytes(3072).toString("base64"); // large enough to go to the blob store
  session.appendMessage({
    ...assistant("Here it is."),
    content: [
      { type: "text", text: "Here it is." },
      { type: "image", data: image, mimeType: "image/png" },
    ],
  } as AgentMessage);
  session.appendCompaction("The user asked about the tokenizer and got a diagram.", undefined, ask, 1200);
  session.appendLabelChange(answer, "first answer");
  await session.flush();
  const file = session.getSessionFile() as string;
  await session.close();
  ctx.out(`  wrote ${file}`);

  step("3. Reloaded: the tree (labels, leaf) and the context");
  const again = await SessionManager.open(file, scope.directoryPath, storage, undefined, undefined, { ...extras, readOnly: true });
  for (const line of renderTree(again.getTree(), again.getLeafId(), style)) ctx.out(`  ${line}`);
  const context = buildSessionContext(again.getEntries(), again.getLeafId());
  ctx.out();
  for (const line of table(
    context.messages.map((m) => {
      const d = describeMessage(m);
      return [d.role, oneLine(d.text, 70)];
    }),
  ))
    ctx.out(`  ${line}`);
  await again.close();

  step("4. Sessions of this workspace");
  const listing = await listSessions(scope.directoryPath, { storage });
  for (const line of table(listing.sessions.map((s) => [s.id.slice(0, 8), `${s.messageCount} msgs`, oneLine(s.displayName, 50)]))) ctx.out(`  ${line}`);
  storage.close();

  step("5. Prompt history");
  const history = HistoryStorage.open(path.join(agentDir, HISTORY_DB_NAME));
  void history.add("Summarise the tokenizer module.", scope.canonicalCwd);
  await history.add("Show me the diagram instead.", scope.canonicalCwd);
  for (const hit of history.search("tokeni", 20)) ctx.out(`  found: ${hit.prompt}`);
  history.close();

  step("6. A legacy-layout session, migrated (copy-retain)");
  const legacyDir = path.join(scope.sessionsRoot, legacyDirectoryNames(scope)[0] as string);
  const legacy = SessionManager.create(scope.canonicalCwd, legacyDir, undefined, { terminalId: null });
  legacy.appendMessage(user("A question from before the v2 layout."));
  legacy.appendMessage(assistant("An answer stored the old way."));
  await legacy.close();
  const outcomes = await migrateAll(demoCtx, scope, (await legacyCandidates(scope)).candidates);
  for (const o of outcomes)
    ctx.out(o.error === undefined ? `  migrated ${path.basename(o.source)} into ${scope.directoryName}` : `  ${style.red("failed")} ${o.error}`);

  step("7. Audit");
  const report = auditAgentDir(agentDir);
  for (const line of formatAuditReport(report, style)) ctx.out(line === "" ? "" : `  ${line}`);
  const ok = report.clean && outcomes.length === 1 && outcomes.every((o) => o.error === undefined);
  ctx.out();
  ctx.out(ok ? style.green("demo finished: everything checked out") : style.red("demo finished with problems"));
  return ok ? 0 : 1;
}
