/**
 * Message identity of the `/gjc` entry: the seven helpers GJC's app calls, and the module
 * `buildSessionContext` linking each context message to the entry it came from, on sessions
 * made by the engine with tool results, images, custom messages, a compaction followed by more
 * turns, a branch with a summary, and a long one.
 */
import fs from "node:fs";
import path from "node:path";

import { describe, expect, it } from "vitest";

import { GjcError, SessionManager as Engine } from "../../src/index.js";
import {
  associateSessionMessageObservationId,
  associateSessionMessageViewportAnchorId,
  buildSessionContext,
  getSessionMessageEntryId,
  getSessionMessageObservationId,
  getSessionMessageViewportAnchorId,
  getUserMessageViewportAnchorIds,
  MessageIdentityError,
  transferSessionMessageIdentity,
  SessionManager as FaceManager,
} from "../../src/gjc/index.js";
import { assistant, user } from "../manager/helpers.js";
import { makeTempDir } from "../helpers/temp.js";

const PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";

function toolTurn(session: Engine, n: number): { ids: string[] } {
  const ids = [
    session.appendMessage(user(`turn ${n}: read the file and fix the failing test ${"context ".repeat(40)}`)),
    session.appendMessage({ role: "assistant", provider: "p", model: "m", content: [{ type: "toolCall", id: `call-${n}`, name: "read", arguments: { path: `src/f${n}.ts` } }], timestamp: n }),
    session.appendMessage({ role: "toolResult", toolCallId: `call-${n}`, toolName: "read", content: [{ type: "text", text: "x".repeat(4000) }, { type: "image", data: PNG, mimeType: "image/png" }], isError: false, timestamp: n }),
    session.appendMessage(assistant(`done with turn ${n}`)),
  ];
  return { ids };
}

describe("the module buildSessionContext links messages to entries", () => {
  it("through a compaction followed by more turns: kept and later messages linked, dropped ones not, summaries never", () => {
    const session = Engine.inMemory("/work");
    const early = toolTurn(session, 1).ids;
    const dropped = session.appendCustomMessageEntry("note", "before the kept range", true);
    const kept = toolTurn(session, 2).ids;
    session.appendCompaction("what happened so far", "short", kept[0]!, 12_345);
    const observed = session.appendCustomMessageEntry("irc", "a message from another agent", true, { channel: "x" }, "agent", "obs-persisted");
    const unobserved = session.appendCustomMessageEntry("note", [{ type: "text", text: "a note" }], false);
    const later = toolTurn(session, 3).ids;

    const context = buildSessionContext(session.getEntries(), session.getLeafId(), undefined, "ns-1");
    expect(context.messages.map((m) => m.role)).toEqual([
      "compactionSummary", "user", "assistant", "toolResult", "assistant", "custom", "custom", "user", "assistant", "toolResult", "assistant",
    ]);
    expect(context.messages.map((m) => getSessionMessageEntryId(m) ?? null)).toEqual([null, ...kept, observed, unobserved, ...later]);
    expect(getSessionMessageObservationId(context.messages[5]!)).toBe("obs-persisted");
    expect(getSessionMessageObservationId(context.messages[6]!)).toBe(`session:ns-1:entry:${unobserved}`);
    expect(getSessionMessageObservationId(context.messages[1]!)).toBeUndefined();
    expect([...early, dropped]).not.toContain(getSessionMessageEntryId(context.messages[1]!));

    // Without a namespace, GJC's default one.
    const legacy = buildSessionContext(session.getEntries(), session.getLeafId());
    expect(getSessionMessageObservationId(legacy.messages[6]!)).toBe(`session:legacy-session:entry:${unobserved}`);
    void session.close();
  });

  it("on a branch with a summary: the summary message has no identity, the turns around it do", () => {
    const session = Engine.inMemory("/work");
    const first = toolTurn(session, 1).ids;
    toolTurn(session, 2);
    session.branchWithSummary(first[3]!, "tried another approach", { files: ["a.ts"] });
    const after = session.appendMessage(user("back on the first branch"));
    const context = buildSessionContext(session.getEntries(), session.getLeafId());
    expect(context.messages.map((m) => m.role)).toEqual(["user", "assistant", "toolResult", "assistant", "branchSummary", "user"]);
    expect(context.messages.map((m) => getSessionMessageEntryId(m) ?? null)).toEqual([...first, null, after]);
    // An earlier leaf: the other branch's turns.
    const other = buildSessionContext(session.getEntries(), first[1]);
    expect(other.messages.map((m) => getSessionMessageEntryId(m))).toEqual(first.slice(0, 2));
    void session.close();
  });

  it("stays aligned over a long session (20,000 messages, custom messages among them)", () => {
    const session = Engine.inMemory("/work");
    const expected: string[] = [];
    for (let i = 0; i < 5_000; i++) {
      expected.push(...toolTurn(session, i).ids);
      if (i % 500 === 0) expected.push(session.appendCustomMessageEntry("progress", `step ${i}`, false, { step: i }));
    }
    const context = buildSessionContext(session.getEntries(), session.getLeafId(), undefined, "long");
    expect(context.messages.length).toBe(expected.length);
    expect(context.messages.map((m) => getSessionMessageEntryId(m))).toEqual(expected);
    void session.close();
  });
});

describe("the face manager's buildSessionContext", () => {
  it("hands out a fresh copy each call, linked to its entries, which a caller may edit without touching the session", () => {
    const session = FaceManager.inMemory("/work");
    const { ids } = toolTurn(session as unknown as Engine, 1);
    const twin = session.appendMessage(user(`turn 1: read the file and fix the failing test ${"context ".repeat(40)}`));
    const first = session.buildSessionContext();
    const second = session.buildSessionContext();
    expect(first.messages[0]).not.toBe(second.messages[0]);
    expect(first.messages.map(getSessionMessageEntryId)).toEqual([...ids, twin]);
    expect(second.messages.map(getSessionMessageEntryId)).toEqual([...ids, twin]);
    (first.messages[0] as unknown as { content: unknown }).content = "edited by the caller";
    (first.messages[2] as unknown as { content: unknown[] }).content.length = 0;
    expect(session.buildSessionContext().messages[0]).toEqual(second.messages[0]);
    expect(session.getEntries()[2]).toMatchObject({ message: { content: [{ type: "text" }, { type: "image", data: PNG }] } });
  });
  it("keeps every edit of a handed-out context (nested parts, arrays, usage) out of the entries, later contexts and the file", async () => {
    const tmp = makeTempDir("gjc-context-copy-");
    try {
      const dir = path.join(tmp.path, "sessions");
      const session = FaceManager.create("/work", dir);
      for (let n = 1; n <= 3; n++) toolTurn(session as unknown as Engine, n);
      session.appendMessage({ ...assistant(`summary ${"of the work ".repeat(30)}`), usage: { input: 1200, output: 300, cacheRead: 0, cacheWrite: 0, cost: { input: 0.01, total: 0.02 } } });
      session.appendCustomMessageEntry("note", [{ type: "text", text: "from an extension" }], true, { observationId: "obs-9", tags: ["a"] });
      session.appendCompaction("the first two turns", "two turns", session.getEntries()[8]!.id as string, 5000);
      toolTurn(session as unknown as Engine, 4);
      await session.flush();
      const file = session.getSessionFile()!;
      const before = { entries: session.getEntries(), context: session.buildSessionContext(), file: fs.readFileSync(file, "utf8") };

      const edit = (context: ReturnType<typeof session.buildSessionContext>) => {
        for (const message of context.messages as unknown as Record<string, unknown>[]) {
          const content = message["content"];
          if (Array.isArray(content)) {
            for (const part of content as Record<string, unknown>[]) {
              if (typeof part["text"] === "string") part["text"] += " [edited]";
              if (typeof part["data"] === "string") part["data"] = "";
              if (typeof part["arguments"] === "object") (part["arguments"] as Record<string, unknown>)["path"] = "/etc/passwd";
            }
            content.push({ type: "text", text: "appended by the app" });
            content.reverse();
          }
          const usage = message["usage"] as { cost?: { total: number } } | undefined;
          if (usage?.cost !== undefined) usage.cost.total = 1e9;
          const details = message["details"] as { tags?: string[] } | undefined;
          details?.tags?.push("b");
          message["role"] = "edited";
        }
        context.messages.splice(0, 1);
        context.messages.length = 3;
      };
      edit(before.context);
      const later = session.buildSessionContext();
      expect(session.getEntries()).toEqual(before.entries);
      expect(later).toEqual(session.buildSessionContext());
      expect(later.messages.map((m) => m.role)).not.toContain("edited");
      expect(JSON.stringify(later)).not.toMatch(/\[edited\]|appended by the app|\/etc\/passwd|1000000000/);
      edit(later);
      await session.flush();
      expect(fs.readFileSync(file, "utf8")).toBe(before.file);
      await session.close();

      // A resumed session's entries are parsed records, not the app's objects: the same holds for them.
      const resumed = await FaceManager.open(file, dir);
      try {
        const first = resumed.buildSessionContext();
        const expected = structuredClone(first);
        edit(first);
        expect(resumed.buildSessionContext()).toEqual(expected);
        expect(resumed.getEntries()).toEqual(before.entries);
      } finally {
        await resumed.close();
      }
    } finally {
      tmp.remove();
    }
  });
});

describe("the identity helpers", () => {
  it("an observation id's first link stands; anchors and entry ids are replaced", () => {
    const message = user("hello");
    expect(associateSessionMessageObservationId(message, "first")).toBe("first");
    expect(associateSessionMessageObservationId(message, "second")).toBe("first");
    expect(getSessionMessageObservationId(message)).toBe("first");
    associateSessionMessageViewportAnchorId(message, "a1");
    associateSessionMessageViewportAnchorId(message, "a2");
    expect(getSessionMessageViewportAnchorId(message)).toBe("a2");
    expect(getSessionMessageViewportAnchorId(user("other"))).toBeUndefined();
  });

  it("lists the anchors of the user's own messages in order, skipping synthetic ones and those without", () => {
    const typed = [user("one"), { ...user("injected"), synthetic: true }, assistant("reply"), user("two"), user("no anchor")];
    typed.forEach((m, i) => i < 4 && associateSessionMessageViewportAnchorId(m, `anchor-${i}`));
    expect(getUserMessageViewportAnchorIds(typed)).toEqual(["anchor-0", "anchor-3"]);
  });

  it("transfers all three links onto copies, and refuses arrays of different lengths with a typed error", () => {
    const session = Engine.inMemory("/work");
    toolTurn(session, 1);
    session.appendCustomMessageEntry("note", "n", true, undefined, "agent", "obs-1");
    const source = buildSessionContext(session.getEntries(), session.getLeafId()).messages;
    associateSessionMessageViewportAnchorId(source[0]!, "anchor");
    const copies = source.map((m) => structuredClone(m));
    transferSessionMessageIdentity(source, copies);
    expect(copies.map((m) => getSessionMessageEntryId(m))).toEqual(source.map((m) => getSessionMessageEntryId(m)));
    expect(getSessionMessageObservationId(copies[4]!)).toBe("obs-1");
    expect(getSessionMessageViewportAnchorId(copies[0]!)).toBe("anchor");

    let caught: unknown;
    try {
      transferSessionMessageIdentity(source, copies.slice(1));
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(MessageIdentityError);
    expect(caught).toBeInstanceOf(GjcError);
    expect((caught as MessageIdentityError).code).toBe("identity_transfer_mismatch");
    expect((caught as Error).message).toBe("Cannot transfer session message identity across 5 source and 4 target messages");
    void session.close();
  });
});
