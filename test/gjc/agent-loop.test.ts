/**
 * The `/gjc` face driven the way GJC 0.15's app drives it, on real files: a session created
 * through the process-cwd claim, turns with tool calls, tool results and images (a scripted
 * model), a compaction followed by more turns, tree navigation with a branch summary, every
 * two-phase transition (new with prepared entries, branch, fork with artifacts, a switch rolled
 * back) with their discards, and a resume through the picker listing and the strict open. After
 * every step the file on disk and the model-facing context are checked.
 */
import fs from "node:fs";
import path from "node:path";

import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";

import { SessionManager } from "../../src/gjc/session-manager.js";
import type { AgentMessage } from "../../src/index.js";
import { auditAgentDir } from "../../src/audit/index.js";
import { makeTempDir } from "../helpers/temp.js";
import { bundleManagerChild } from "../manager/child.js";
import { startChild, type BundledChild } from "../storage/child-bundle.js";

let tmp: { path: string; remove(): void };
let agentDir: string;
let workspace: string;
beforeEach(() => {
  tmp = makeTempDir("gjc-face-loop-");
  agentDir = path.join(tmp.path, "agent");
  workspace = path.join(tmp.path, "work");
  fs.mkdirSync(workspace, { mode: 0o700 });
});
afterEach(() => tmp.remove());

const PNG = Buffer.alloc(48 * 1024, 7).toString("base64");
const options = () => ({ agentDir, terminalId: null });

/** A scripted model: a tool call for a prompt, text once the tool result is in. */
function scriptedModel(context: readonly unknown[]): AgentMessage {
  const last = context[context.length - 1] as { role: string; toolCallId?: string };
  const turn = context.filter((m) => (m as { role: string }).role === "assistant").length;
  const base = { role: "assistant", provider: "scripted", model: "loop-1", timestamp: 1000 + turn, usage: { input: 10, output: 5 } };
  if (last.role === "user") {
    return {
      ...base,
      content: [{ type: "toolCall", id: `call-${turn}`, name: "screenshot", arguments: { path: `file-${turn}.png` } }],
      stopReason: "toolUse",
    } as AgentMessage;
  }
  return { ...base, content: [{ type: "text", text: `done after ${last.toolCallId}: ${"x".repeat(2000)}` }], stopReason: "stop" } as AgentMessage;
}

/** One user turn as the app runs it: prompt, model, tool result with an image (under a read lease), model. */
async function runTurn(manager: SessionManager, prompt: string): Promise<string[]> {
  const ids = [manager.appendMessage({ role: "user", content: [{ type: "text", text: prompt.repeat(20) }], timestamp: 1 } as AgentMessage)];
  for (;;) {
    const reply = scriptedModel(manager.buildSessionContext().messages);
    ids.push(manager.appendMessage(reply));
    const call = (reply as unknown as { content: { type: string; id?: string; name?: string }[] }).content.find((c) => c.type === "toolCall");
    if (call === undefined) return ids;
    const generation = manager.getCwdGeneration();
    const result = await manager.runWithCwdReadLease(async () => ({
      role: "toolResult",
      toolCallId: call.id,
      toolName: call.name,
      content: [
        { type: "text", text: `captured ${call.id}` },
        { type: "image", data: PNG, mimeType: "image/png" },
      ],
      isError: false,
      timestamp: 2,
    }));
    expect(manager.getCwdGeneration()).toBe(generation);
    ids.push(manager.appendMessage(result as AgentMessage));
  }
}

/** The records of a session file as on disk. */
function records(file: string): Record<string, unknown>[] {
  return fs
    .readFileSync(file, "utf8")
    .split("\n")
    .filter((line) => line.length > 0)
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

const roles = (manager: SessionManager) => manager.buildSessionContext().messages.map((m) => (m as { role: string }).role);
const jsonlIn = (dir: string) => fs.readdirSync(dir).filter((name) => name.endsWith(".jsonl"));

/** The file holds exactly the manager's entries, in order, under its header. */
function expectFileMatches(manager: SessionManager): void {
  const file = manager.getSessionFile()!;
  const onDisk = records(file);
  expect(onDisk[0]).toMatchObject({ type: "session", id: manager.getSessionId() });
  expect(onDisk.slice(1).map((r) => r.id)).toEqual(manager.getEntries().map((e) => e.id));
}

describe("the /gjc face driven as GJC's app drives it", () => {
  it("runs a session from the ownership claim through every two-phase transition to a strict resume", async () => {
    const destination = SessionManager.managedDestination(workspace, agentDir);
    const manager = SessionManager.create(workspace, destination, undefined, options());
    expect(SessionManager.claimProcessCwdOwnership(manager)).toBe(true);
    expect(SessionManager.isProcessCwdOwner(manager)).toBe(true);
    expect(manager.isManagedDestination()).toBe(true);
    expect(manager.getDestinationForFork()).toBe(destination);
    const sessionDir = manager.getSessionDir();

    // Nothing on disk before the first assistant message; the header, model and prompt once it comes.
    manager.appendModelChange("scripted/loop-1");
    manager.appendThinkingLevelChange("medium");
    expect(fs.existsSync(manager.getSessionFile()!)).toBe(false);
    const first = await runTurn(manager, "look at the first screen ");
    expectFileMatches(manager);
    expect(roles(manager)).toEqual(["user", "assistant", "toolResult", "assistant"]);
    expect(manager.getResidentImageBytes()).toBe(48 * 1024);
    expect(manager.getTranscriptFileBytes()).toBe(fs.statSync(manager.getSessionFile()!).size);
    // The file refers to the image in the blob store; the manager holds it whole, and says so.
    expect(fs.readFileSync(manager.getSessionFile()!, "utf8")).toContain("blob:sha256:");
    expect(manager.getTranscriptFileBytes()).toBeLessThan(PNG.length);
    const held = manager.getEntries().reduce((sum, entry) => sum + Buffer.byteLength(JSON.stringify(entry)) + 1, 0);
    expect(manager.getSessionMemoryStats().hotResidentBytes).toBe(held);
    expect(held).toBeGreaterThan(PNG.length);

    const second = await runTurn(manager, "and the second ");
    const compaction = manager.appendCompaction("The first screen was captured.", "first screen", second[0]!, 8000);
    expect(manager.getEntryForFidelity(compaction)).toMatchObject({ type: "compaction", firstKeptEntryId: second[0] });
    expect(manager.evictCompactedContent(second[0]!, compaction)).toMatchObject({ evictedEntries: 0 });
    await runTurn(manager, "a third after compacting ");
    expectFileMatches(manager);
    expect(roles(manager)).toEqual(["compactionSummary", "user", "assistant", "toolResult", "assistant", "user", "assistant", "toolResult", "assistant"]);

    // Tree navigation with a summary of the path left.
    const before = manager.revisionSnapshot();
    const summary = manager.branchWithSummary(first[3]!, "Tried two more screens; went back.", { screens: 2 });
    expect(manager.revisionSnapshot().leaf).toBeGreaterThan(before.leaf);
    expect(manager.getEntry(summary)).toMatchObject({ type: "branch_summary", parentId: first[3] });
    expect(roles(manager)).toEqual(["user", "assistant", "toolResult", "assistant", "branchSummary"]);
    const alternative = await runTurn(manager, "instead, the fourth ");
    expectFileMatches(manager);
    expect(manager.getActivePathEntriesCanonical().map((e) => e.id)).toContain(alternative[0]);
    expect(manager.getLastModelChangeRole()).toBe("default");

    // /new with a handoff: prepared, entries staged on the successor, discarded: nothing left; then committed.
    const predecessor = manager.getSessionFile()!;
    const predecessorId = manager.getSessionId();
    await manager.flush();
    const rollback = await manager.captureRollbackState();
    const discarded = await manager.prepareNewSession({ parentSession: predecessor });
    manager.appendPreparedModelChange(discarded, "scripted/handoff-1");
    await manager.ensurePreparedNewSessionOnDisk(discarded);
    expect(manager.getSessionId()).toBe(predecessorId);
    await manager.discardPreparedNewSession(discarded);
    await manager.discardPreparedNewSession(discarded);
    expect(() => manager.commitPreparedNewSession(discarded)).toThrow("Prepared session is no longer available.");
    expect(fs.existsSync(discarded.sessionFile!)).toBe(false);
    await manager.restoreRollbackState(rollback);
    expect(manager.getSessionFile()).toBe(predecessor);

    const handoff = await manager.prepareNewSession({ parentSession: predecessor });
    expect(Object.isFrozen(handoff)).toBe(true);
    manager.appendPreparedModelChange(handoff, "scripted/handoff-1");
    manager.appendPreparedCustomMessageEntry(handoff, "handoff", "Continue with the fourth screen.", true);
    await manager.ensurePreparedNewSessionOnDisk(handoff);
    expect(manager.buildPreparedNewSessionContext(handoff).messages).toHaveLength(1);
    expect(fs.existsSync(handoff.sessionFile!)).toBe(false);
    expect(manager.getSessionFile()).toBe(predecessor);
    manager.commitPreparedNewSession(handoff);
    expect(manager.getSessionId()).toBe(handoff.sessionId);
    expect(records(handoff.sessionFile!)[0]).toMatchObject({ type: "session", id: handoff.sessionId, parentSession: predecessor });
    expectFileMatches(manager);
    expect(roles(manager)).toEqual(["custom"]);
    expect(await manager.saveArtifact("handoff document", "handoff")).toBe("0");
    await runTurn(manager, "after the handoff ");
    expectFileMatches(manager);

    // /branch: the successor holds root..leaf, written by the commit; a discarded one leaves nothing.
    const handoffFile = manager.getSessionFile()!;
    const leaf = manager.getBranch()[2]!.id as string;
    const droppedBranch = await manager.prepareBranchedSession(leaf);
    await manager.discardPreparedNewSession(droppedBranch);
    expect(fs.existsSync(droppedBranch.sessionFile!)).toBe(false);
    const branch = await manager.prepareBranchedSession(leaf);
    expect(fs.existsSync(branch.sessionFile!)).toBe(false);
    manager.commitPreparedNewSession(branch);
    expect(records(branch.sessionFile!)[0]).toMatchObject({ parentSession: handoffFile });
    expect(manager.getEntries()).toHaveLength(3);
    expectFileMatches(manager);

    // /fork: a copy with its artifacts, staged hidden until the commit.
    await manager.saveArtifact("tool output ".repeat(100), "bash");
    const artifactsBefore = fs.readdirSync(manager.getArtifactsDir()!).sort();
    const droppedFork = await manager.prepareFork();
    await manager.discardPreparedNewSession(droppedFork!);
    expect(fs.readdirSync(sessionDir).filter((name) => name.startsWith(".fork-"))).toEqual([]);
    const fork = await manager.prepareFork();
    expect(fs.existsSync(fork!.artifactsDir!)).toBe(false);
    manager.commitPreparedNewSession(fork!);
    expect(fs.readdirSync(fork!.artifactsDir!).sort()).toEqual(artifactsBefore);
    expect(records(fork!.sessionFile!)[0]).toMatchObject({ parentSession: branch.sessionId });
    expectFileMatches(manager);

    // A switch rolled back: the predecessor comes back with its leaf.
    const forkLeaf = manager.getLeafId();
    const snapshot = await manager.captureRollbackState();
    await manager.setSessionFile(predecessor);
    expect(manager.getSessionId()).toBe(predecessorId);
    await manager.restoreRollbackState(snapshot);
    expect(manager.getSessionFile()).toBe(fork!.sessionFile);
    expect(manager.getLeafId()).toBe(forkLeaf);

    // Drafts: kept for the next resume, read once.
    await manager.saveDraft("half a prompt");
    expect(await manager.consumeDraft()).toBe("half a prompt");
    expect(await manager.consumeDraft()).toBeNull();

    const contextAtClose = manager.buildSessionContext();
    await manager.close();
    expect(SessionManager.isProcessCwdOwner(manager)).toBe(false);
    expect(jsonlIn(sessionDir).sort()).toEqual([predecessor, handoffFile, branch.sessionFile!, fork!.sessionFile!].map((f) => path.basename(f)).sort());

    // Resume through the picker listing and the strict open: the same context, the file untouched.
    const rows = await SessionManager.listManagedForResumePickerReadOnly(workspace, agentDir);
    expect(rows.map((row) => row.path)).toContain(fork!.sessionFile);
    const bytes = fs.readFileSync(fork!.sessionFile!);
    const inspection = await SessionManager.inspectSessionTailReadOnly(fork!.sessionFile!);
    // The branch was cut after the prompt of a turn: the fork ends on a user message, an interrupted turn.
    expect(inspection.kind).toBe("resumable");
    if (inspection.kind === "error") throw new Error(inspection.reason);
    const opened = await SessionManager.openExistingStrict(inspection.identity, destination, undefined, "copy-retain", "shadow", options());
    if (opened.kind !== "opened") throw new Error(opened.reason);
    expect(opened.manager.buildSessionContext()).toEqual(contextAtClose);
    await opened.manager.ensureOnDisk();
    await opened.manager.close();
    expect(fs.readFileSync(fork!.sessionFile!)).toEqual(bytes);
  });
});

describe("a process killed between prepare and commit", () => {
  let child: BundledChild;
  beforeAll(async () => {
    child = await bundleManagerChild("prepare-and-wait", path.join(import.meta.dirname, "children"));
  });
  afterAll(() => child?.remove());

  /** Starts the child on `file`, waits for its `prepared <file>` line, SIGKILLs it. @returns the successor file it prepared */
  async function killAfterPrepare(file: string, kind: "new" | "branched" | "fork"): Promise<string> {
    const proc = startChild(child, [file, kind, agentDir]);
    let stderr = "";
    proc.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    const successor = await new Promise<string>((resolve, reject) => {
      let out = "";
      proc.stdout?.on("data", (chunk: Buffer) => {
        out += chunk.toString();
        const match = /^prepared (.+)\n/m.exec(out);
        if (match !== null) resolve(match[1]!);
      });
      proc.on("close", (status) => reject(new Error(`child ended with ${status}: ${stderr}`)));
    });
    const closed = new Promise((resolve) => proc.on("close", (_status, signal) => resolve(signal)));
    proc.kill("SIGKILL");
    expect(await closed).toBe("SIGKILL");
    return successor;
  }

  it("leaves nothing a listing, a resume, the strict inspection or the audit takes for a session", async () => {
    const destination = SessionManager.managedDestination(workspace, agentDir);
    const manager = SessionManager.create(workspace, destination, undefined, options());
    const sessionDir = manager.getSessionDir();
    await runTurn(manager, "first ");
    await runTurn(manager, "second ");
    await manager.saveArtifact("x".repeat(4096), "bash");
    const file = manager.getSessionFile()!;
    await manager.close();
    const bytes = fs.readFileSync(file);

    for (const kind of ["new", "branched", "fork"] as const) {
      const successor = await killAfterPrepare(file, kind);
      expect(path.dirname(successor)).toBe(sessionDir);
      expect(fs.existsSync(successor)).toBe(false);
      expect(fs.existsSync(successor.replace(/\.jsonl$/, ""))).toBe(false);
      expect(jsonlIn(sessionDir)).toEqual([path.basename(file)]);
      // A fork's artifact copy is staged under a hidden name, never as the successor's artifacts directory.
      expect(
        fs
          .readdirSync(sessionDir)
          .filter((name) => !name.startsWith("."))
          .sort(),
      ).toEqual([path.basename(file), path.basename(file, ".jsonl")].sort());
      expect((await SessionManager.listManagedForResumePickerReadOnly(workspace, agentDir)).map((row) => row.path)).toEqual([file]);
      expect(await SessionManager.inspectSessionTailReadOnly(successor)).toEqual({ kind: "error", reason: "missing" });
      // The source is as it was, and opens again: the killed process's writer lock went with it.
      expect(fs.readFileSync(file)).toEqual(bytes);
      const resumed = await SessionManager.continueRecent(workspace, destination, undefined, undefined, undefined, options());
      expect(resumed.getSessionFile()).toBe(file);
      await resumed.close();
      const audit = auditAgentDir(agentDir);
      expect(audit.counts).toMatchObject({ sessions: 1, errors: 0 });
    }
  });

  it("leaves a killed fork's artifact staging only until the next fork in that directory, which never takes a live one", async () => {
    const destination = SessionManager.managedDestination(workspace, agentDir);
    const manager = SessionManager.create(workspace, destination, undefined, options());
    const sessionDir = manager.getSessionDir();
    await runTurn(manager, "first ");
    await manager.saveArtifact("build output\n".repeat(2_000), "bash");
    const file = manager.getSessionFile()!;
    await manager.close();
    const stagings = () =>
      fs
        .readdirSync(sessionDir)
        .filter((name) => name.startsWith(".fork-"))
        .sort();

    const killed = await killAfterPrepare(file, "fork");
    const killedStaging = `.fork-${path.basename(killed, ".jsonl")}.artifacts`;
    expect(stagings()).toEqual([killedStaging]);

    // A fork under way in this process holds its staging: another manager's fork leaves it alone, and reaps the killed one.
    const live = await SessionManager.open(file, undefined, undefined, undefined, undefined, options());
    const liveFork = await live.prepareFork();
    const liveStaging = `.fork-${path.basename(liveFork!.sessionFile!, ".jsonl")}.artifacts`;
    const other = SessionManager.create(workspace, destination, undefined, options());
    await runTurn(other, "other ");
    await other.saveArtifact("other output", "bash");
    const otherFork = await other.fork();
    expect(stagings()).toEqual([liveStaging]);
    expect(fs.readFileSync(path.join(otherFork!.newSessionFile.replace(/\.jsonl$/, ""), "0.bash.log"), "utf8")).toBe("other output");

    live.commitPreparedNewSession(liveFork!);
    expect(stagings()).toEqual([]);
    expect(fs.readFileSync(path.join(liveFork!.artifactsDir!, "0.bash.log"), "utf8")).toBe("build output\n".repeat(2_000));
    await live.close();
    await other.close();
    expect(auditAgentDir(agentDir).counts).toMatchObject({ errors: 0 });
  });
});
