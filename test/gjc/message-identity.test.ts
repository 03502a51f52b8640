/**
 * Message identity of the `/gjc` entry: the seven helpers GJC's app calls, and the module
 * `buildSessionContext` linking each context message to the entry it came from, on sessions
 * made by the engine with tool results, images, custom messages, a compaction followed by more
 * turns, a branch with a summary, and a long one.
 */
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
