/**
 * Message identity of the `/gjc` entry: the seven helpers GJC's app calls, and the module
 * `buildSessionContext` linking each context message to the entry it came from, on sessions
 * made by the engine with tool results, images, custom messages, a compaction followed by more
 * turns, a branch with a summary, and a long one.
 */
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

import { describe, expect, it } from "vitest";

import { GjcError, SessionManager as Engine } from "../../src/index.js";
import {
  associateSessionMessageEntryId,
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
import { bundleChild } from "../storage/child-bundle.js";

const PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";

/** The V8 switch under which a private field cannot be added to an object that takes no new properties. */
const NONEXTENSIBLE_PRIVATE = "js-nonextensible-applies-to-private";

/** This Node, or one of the newer ones `.ci/run` caches, when it has {@link NONEXTENSIBLE_PRIVATE}. */
function nodeRefusingPrivateFields(): string | undefined {
  const cache = process.env["GJC_RUNTIME_CACHE"] ?? path.join(process.env["XDG_CACHE_HOME"] ?? path.join(os.homedir(), ".cache"), "gjc-runtimes");
  const cached = fs.existsSync(cache)
    ? fs
        .readdirSync(cache)
        .filter((name) => /^node-\d/.test(name))
        .map((name) => path.join(cache, name, "bin", "node"))
    : [];
  return [process.execPath, ...cached].find(
    (node) => fs.existsSync(node) && spawnSync(node, ["--v8-options"], { encoding: "utf8" }).stdout.includes(NONEXTENSIBLE_PRIVATE),
  );
}

function toolTurn(session: Engine, n: number): { ids: string[] } {
  const ids = [
    session.appendMessage(user(`turn ${n}: read the file and fix the failing test ${"context ".repeat(40)}`)),
    session.appendMessage({
      role: "assistant",
      provider: "p",
      model: "m",
      content: [{ type: "toolCall", id: `call-${n}`, name: "read", arguments: { path: `src/f${n}.ts` } }],
      timestamp: n,
    }),
    session.appendMessage({
      role: "toolResult",
      toolCallId: `call-${n}`,
      toolName: "read",
      content: [
        { type: "text", text: "x".repeat(4000) },
        { type: "image", data: PNG, mimeType: "image/png" },
      ],
      isError: false,
      timestamp: n,
    }),
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
      "compactionSummary",
      "user",
      "assistant",
      "toolResult",
      "assistant",
      "custom",
      "custom",
      "user",
      "assistant",
      "toolResult",
      "assistant",
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

  it("pairs past entries that make no message (empty branch summaries) and stops at the compaction's kept range", () => {
    const session = Engine.inMemory("/work");
    const early = toolTurn(session, 1).ids;
    const kept = toolTurn(session, 2).ids;
    session.appendCompaction("so far", "short", kept[0]!, 100);
    const expected = [...kept];
    for (let n = 3; n < 7; n++) {
      const ids = toolTurn(session, n).ids;
      expected.push(...ids);
      // An empty summary makes no message: the walk back asks for one more entry each time.
      session.branchWithSummary(ids[3]!, "");
      expect(session.getLeafEntry()).toMatchObject({ type: "branch_summary", summary: "" });
    }
    expected.push(session.appendMessage(user("last")));
    const context = buildSessionContext(session.getEntries(), session.getLeafId());
    expect(context.messages[0]!.role).toBe("compactionSummary");
    expect(context.messages.slice(1).map((m) => getSessionMessageEntryId(m))).toEqual(expected);
    expect(expected).not.toContain(early[0]);
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
      session.appendMessage({
        ...assistant(`summary ${"of the work ".repeat(30)}`),
        usage: { input: 1200, output: 300, cacheRead: 0, cacheWrite: 0, cost: { input: 0.01, total: 0.02 } },
      });
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

  it("a link goes with the object alone: no copy, serialization or comparison sees it; frozen and inherited objects are handled", () => {
    const message = user("hello");
    const plain = structuredClone(message);
    associateSessionMessageEntryId(message, "e1");
    associateSessionMessageViewportAnchorId(message, "a1");
    associateSessionMessageObservationId(message, "o1");
    expect(JSON.stringify(message)).toBe(JSON.stringify(plain));
    expect(Object.keys(message)).toEqual(Object.keys(plain));
    expect(message).toStrictEqual(plain);
    for (const copy of [{ ...message }, Object.assign({}, message), structuredClone(message), JSON.parse(JSON.stringify(message)) as object]) {
      expect(getSessionMessageEntryId(copy)).toBeUndefined();
      expect(getSessionMessageViewportAnchorId(copy)).toBeUndefined();
      expect(getSessionMessageObservationId(copy)).toBeUndefined();
    }
    // Not an object (a slot past an array's end, say): no link, as a weak map answers; linking one throws as it does.
    for (const none of [undefined, null, "text", 7]) {
      expect(getSessionMessageEntryId(none as never)).toBeUndefined();
      expect(getSessionMessageObservationId(none as never)).toBeUndefined();
      expect(getSessionMessageViewportAnchorId(none as never)).toBeUndefined();
      expect(() => associateSessionMessageEntryId(none as never, "e")).toThrow(
        expect.objectContaining({ name: "MessageIdentityError", code: "not_an_object" }),
      );
    }
    expect(getUserMessageViewportAnchorIds([])).toEqual([]);
    // An object whose prototype is a linked message is another message.
    expect(getSessionMessageEntryId(Object.create(message) as object)).toBeUndefined();

    // Frozen after its link: the link reads, and a new one replaces it.
    Object.freeze(message);
    expect(getSessionMessageEntryId(message)).toBe("e1");
    associateSessionMessageEntryId(message, "e2");
    expect(getSessionMessageEntryId(message)).toBe("e2");
    associateSessionMessageViewportAnchorId(message, "a2");
    expect(getSessionMessageViewportAnchorId(message)).toBe("a2");
    expect(associateSessionMessageObservationId(message, "o2")).toBe("o1");

    // Frozen before any link (as GJC's app may hand one in): linked all the same.
    const sealed = Object.seal(assistant("sealed"));
    const frozen = Object.freeze(assistant("frozen"));
    associateSessionMessageEntryId(sealed, "s1");
    associateSessionMessageEntryId(frozen, "f1");
    expect([getSessionMessageEntryId(sealed), getSessionMessageEntryId(frozen)]).toEqual(["s1", "f1"]);
    transferSessionMessageIdentity([frozen], [sealed]);
    expect(getSessionMessageEntryId(sealed)).toBe("f1");
  });

  // Skipped only where neither this Node nor a newer one `.ci/run` caches has the switch.
  const node = nodeRefusingPrivateFields();
  it.skipIf(node === undefined)("links messages that take no new properties on a runtime that refuses them private fields too", async () => {
    // The links need no addon: the child is bundled without one.
    const child = await bundleChild("message-links", path.join(import.meta.dirname, "children"));
    try {
      const run = spawnSync(node!, [`--${NONEXTENSIBLE_PRIVATE}`, child.file], { encoding: "utf8" });
      expect(run.stderr).toBe("");
      const results = JSON.parse(run.stdout) as Record<string, unknown>;
      // The runtime did refuse: the links took their other way.
      expect(results["refuses"]).toBe(true);
      for (const name of ["frozen", "sealed", "closed", "open"]) expect(results[name]).toEqual([`${name}-entry-2`, `${name}-anchor`, `${name}-observation`]);
      expect(results["transferred"]).toEqual(["open-entry-2", "open-anchor", "open-observation"]);
      expect(results["other"]).toBeNull();
    } finally {
      child.remove();
    }
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
