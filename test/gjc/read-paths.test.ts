/**
 * The `/gjc` entry's read paths for code outside the manager: the read capability behind GJC's
 * private `session-manager-internal` module, the frozen read-only facade extensions get, and the
 * artifact capability only the manager and its facades reach; all on the face's manager.
 */
import fs from "node:fs";
import path from "node:path";

import { afterEach, beforeEach, describe, expect, it } from "vitest";

import {
  SessionManager,
  createReadonlySessionManager,
  getEntriesForInternalRead,
  getSessionContextForInternalRead,
  getSessionMessageEntryId,
  getSessionMessageObservationId,
  getTreeForInternalRead,
  sessionArtifactCapability,
  sessionReadAccess,
} from "../../src/gjc/index.js";
import { assistant, user } from "../manager/helpers.js";
import { makeTempDir } from "../helpers/temp.js";

let tmp: { path: string; remove(): void };
let dir: string;
let cwd: string;
const managers: SessionManager[] = [];

beforeEach(() => {
  tmp = makeTempDir("gjc-read-paths-");
  dir = path.join(tmp.path, "sessions");
  cwd = path.join(tmp.path, "workspace");
  fs.mkdirSync(cwd);
});
afterEach(async () => {
  for (const manager of managers.splice(0)) await manager.close();
  tmp.remove();
});

function session(): SessionManager {
  const manager = SessionManager.create(cwd, dir);
  managers.push(manager);
  return manager;
}

function turns(manager: SessionManager, count: number): string[] {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    ids.push(manager.appendMessage(user(`question ${i}`)));
    ids.push(manager.appendMessage(assistant(`answer ${i} ${"detail ".repeat(100)}`)));
  }
  return ids;
}

describe("the read capability (GJC's session-manager-internal helpers)", () => {
  it("reads what the public getters read, with the context's messages linked under the session id", () => {
    const manager = session();
    const ids = turns(manager, 50);
    const note = manager.appendCustomMessageEntry("note", "from an extension", true);
    expect(sessionReadAccess(manager)).toBe(sessionReadAccess(manager));
    expect(getEntriesForInternalRead(manager)).toEqual(manager.getEntries());
    expect(getTreeForInternalRead(manager)).toEqual(manager.getTree());
    const context = getSessionContextForInternalRead(manager);
    expect(context).toEqual(manager.buildSessionContext());
    expect(context.messages.map((m) => getSessionMessageEntryId(m))).toEqual([...ids, note]);
    expect(getSessionMessageObservationId(context.messages.at(-1)!)).toBe(`session:${manager.getSessionId()}:entry:${note}`);
  });

  it("hands out one context until the session changes: an append, a leaf move or an in-place update", () => {
    const manager = session();
    const ids = turns(manager, 20);
    const first = getSessionContextForInternalRead(manager);
    expect(getSessionContextForInternalRead(manager)).toBe(first);
    const added = manager.appendMessage(user("one more"));
    const second = getSessionContextForInternalRead(manager);
    expect(second).not.toBe(first);
    expect(getSessionMessageEntryId(second.messages.at(-1)!)).toBe(added);
    manager.branch(ids[9]!);
    const branched = getSessionContextForInternalRead(manager);
    expect(branched.messages.map((m) => getSessionMessageEntryId(m))).toEqual(ids.slice(0, 10));
    const target = manager.getEntry(ids[1]!)!;
    manager.applyEntryMessageUpdates([{ ...target, message: assistant("rewritten answer") } as typeof target]);
    const updated = getSessionContextForInternalRead(manager);
    expect(updated).not.toBe(branched);
    expect(updated.messages[1]).toMatchObject({ content: [{ type: "text", text: "rewritten answer" }] });
    expect(updated).toEqual(manager.buildSessionContext());
  });

  it("follows the manager to the session a committed transition put it on", async () => {
    const manager = session();
    turns(manager, 3);
    const view = sessionReadAccess(manager);
    expect(view.getEntries()).toHaveLength(6);
    const prepared = await manager.prepareNewSession();
    expect(view.getEntries()).toHaveLength(6);
    manager.commitPreparedNewSession(prepared);
    expect(view.getEntries()).toEqual([]);
    const first = manager.appendMessage(user("in the new session"));
    expect(view.getSessionContext().messages.map((m) => getSessionMessageEntryId(m))).toEqual([first]);
  });
});

describe("createReadonlySessionManager", () => {
  it("is frozen and answers with frozen copies: changing one changes nothing in the session", () => {
    const manager = session();
    const ids = turns(manager, 5);
    manager.appendLabelChange(ids[0]!, "start");
    const facade = createReadonlySessionManager(manager);
    expect(Object.isFrozen(facade)).toBe(true);
    const entries = facade.getEntries();
    expect(entries).toEqual(manager.getEntries());
    expect(Object.isFrozen(entries[0])).toBe(true);
    expect(() => {
      (entries[0] as { id: string }).id = "changed";
    }).toThrow(TypeError);
    expect(facade.getBranch()).toEqual(manager.getBranch());
    expect(facade.getLeafEntry()).toEqual(manager.getLeafEntry());
    expect(facade.getEntry(ids[3]!)).toEqual(manager.getEntry(ids[3]!));
    expect(facade.getTree()).toEqual(manager.getTree());
    expect(facade.getUsageStatistics()).toEqual(manager.getUsageStatistics());
    expect(facade.getLabel(ids[0]!)).toBe("start");
    expect(facade.getHeader()).toEqual(manager.getHeader());
    expect(Object.isFrozen(facade.getHeader())).toBe(true);
    expect([facade.getCwd(), facade.getSessionId(), facade.getSessionFile(), facade.getSessionDir(), facade.getLeafId(), facade.getArtifactsDir()]).toEqual([
      manager.getCwd(),
      manager.getSessionId(),
      manager.getSessionFile(),
      manager.getSessionDir(),
      manager.getLeafId(),
      manager.getArtifactsDir(),
    ]);
    expect(manager.getEntry(ids[0]!)!.id).toBe(ids[0]);
  });

  it("finds an artifact's path through the manager's artifacts, and null for an unknown id", async () => {
    const manager = session();
    turns(manager, 1);
    await manager.flush();
    const facade = createReadonlySessionManager(manager);
    const id = await manager.saveArtifact("tool output ".repeat(1000), "bash");
    const found = await facade.getArtifactPath(id!);
    expect(found).toBe(path.join(manager.getArtifactsDir()!, `${id}.bash.log`));
    expect(fs.readFileSync(found!, "utf8")).toBe("tool output ".repeat(1000));
    expect(await facade.getArtifactPath("999")).toBeNull();
  });
});

describe("sessionArtifactCapability", () => {
  it("one frozen capability per manager, reached from its facades, never from a look-alike", async () => {
    const manager = session();
    turns(manager, 1);
    await manager.flush();
    const capability = sessionArtifactCapability(manager)!;
    expect(Object.isFrozen(capability)).toBe(true);
    expect(sessionArtifactCapability(manager)).toBe(capability);
    const facade = createReadonlySessionManager(manager);
    expect(sessionArtifactCapability(facade)).toBe(capability);
    expect(sessionArtifactCapability({ ...facade })).toBeUndefined();
    expect(sessionArtifactCapability(null)).toBeUndefined();
    expect(sessionArtifactCapability("manager")).toBeUndefined();
    const id = await capability.saveArtifact("spilled", "read");
    expect(fs.readFileSync(path.join(manager.getArtifactsDir()!, `${id}.read.log`), "utf8")).toBe("spilled");
  });
});
