/**
 * Shared pieces of the line index tests: what a session looks like from outside (compared
 * between an open through the index and a full parse), and random session files with
 * branches, compactions, patches, invalid lines and foreign key orders.
 */
import fs from "node:fs";
import path from "node:path";

import fc from "fast-check";

import { MemorySessionStorage, SessionManager, type SessionStorage, type SessionTreeNode } from "../../src/index.js";
import { decodeLineIndexFrom, scanWhole, type DecodedLineIndex } from "../../src/manager/line-index.js";
import { classifyRows, type LineTable } from "../../src/session/index.js";

const quiet = { error() {} };

/** The line index in `bytes`, or `undefined` when its header is not ours. */
export function decodeLineIndex(bytes: Buffer): DecodedLineIndex | undefined {
  return decodeLineIndexFrom((into, position) => bytes.copy(into, 0, position), bytes.length);
}

/** Opens `file` read-only, through `storage` (default: the explicit directory's file storage). */
export function openReadOnly(file: string, storage?: SessionStorage): Promise<SessionManager> {
  return SessionManager.open(file, path.dirname(file), storage, undefined, undefined, { readOnly: true, terminalId: null, logger: quiet });
}

/** Opens `file` for writing through the explicit directory's file storage. */
export function openWritable(file: string): Promise<SessionManager> {
  return SessionManager.open(file, path.dirname(file), undefined, undefined, undefined, { terminalId: null, logger: quiet });
}

/**
 * Everything a caller can see of a session. The context and the branch are taken first, so
 * an indexed open is compared while its off-path entries are still unread.
 */
export function snapshot(manager: SessionManager): Record<string, unknown> {
  const context = manager.buildSessionContext();
  const branch = manager.getBranch();
  const leaf = manager.getLeafId();
  const header = manager.getHeader();
  const name = manager.getSessionName();
  const entries = manager.getEntries();
  const labels = entries.map((entry) => (typeof entry.id === "string" ? manager.getLabel(entry.id) : undefined));
  const { path: _path, lineIndex: _lineIndex, ...report } = manager.getLoadReport();
  return {
    context,
    branch,
    leaf,
    header,
    name,
    entries,
    labels,
    tree: flatTree(manager.getTree()),
    usage: manager.getUsageStatistics(),
    report: { ...report },
  };
}

/**
 * The tree as a list of its nodes in depth-first order, each with its children's ids in place of the children: a long
 * chain is a tree as deep as it is long, deeper than a recursive comparison can walk.
 */
function flatTree(roots: SessionTreeNode[]): Array<{ entry: unknown; label: string | undefined; children: unknown[] }> {
  const out: Array<{ entry: unknown; label: string | undefined; children: unknown[] }> = [];
  const stack = [...roots].reverse();
  for (let node = stack.pop(); node !== undefined; node = stack.pop()) {
    out.push({ entry: node.entry, label: node.label, children: node.children.map((child) => child.entry.id) });
    for (let i = node.children.length - 1; i >= 0; i--) stack.push(node.children[i]!);
  }
  return out;
}

/** What a full parse of `file`'s bytes gives (memory storage keeps no line index). */
export async function fullParse(file: string): Promise<Record<string, unknown>> {
  const storage = new MemorySessionStorage({ root: path.dirname(file) });
  storage.writeTextSync(file, fs.readFileSync(file));
  return snapshot(await openReadOnly(file, storage));
}

/** The line index sidecar of `file`. */
export function sidecarOf(file: string): string {
  return path.join(path.dirname(file), `.gjc-lines.${path.basename(file)}.v6`);
}

/**
 * The parent row of every entry row of `file`'s index, beside those a fresh scan of the file resolves
 * (a string when the rows cannot be a tree's).
 */
export function storedLinks(file: string): { stored: unknown; scanned: unknown } {
  const decoded = decodeLineIndex(fs.readFileSync(sidecarOf(file)))!;
  const links = (table: LineTable): unknown => {
    const classes = classifyRows(table);
    return typeof classes === "string" ? classes : [...classes.entryRows].map((row) => [row, table.parent(row)]);
  };
  return { stored: links(decoded.table), scanned: links(scanWhole(fs.readFileSync(file))!) };
}

/** One line of a generated session file. */
export type LineSpec =
  | { kind: "entry"; type: EntryKind; parent: number; dup: boolean; idFirst: boolean; text: string; crlf: boolean }
  | { kind: "header_patch"; text: string }
  | { kind: "entry_patch"; target: number; text: string }
  | { kind: "invalid"; variant: InvalidKind; cut: number; text: string }
  | { kind: "blank" };

const ENTRY_KINDS = [
  "user",
  "assistant",
  "assistant",
  "user",
  "thinking",
  "model",
  "compaction",
  "label",
  "info",
  "custom",
  "custom_message",
  "branch_summary",
  "unknown_type",
  "bad_fields",
  "root",
] as const;
type EntryKind = (typeof ENTRY_KINDS)[number];
const INVALID_KINDS = ["garbage", "torn", "glued", "nul", "non_utf8", "array", "spaces", "torn_then_record"] as const;
type InvalidKind = (typeof INVALID_KINDS)[number];

const text = fc.string({ unit: fc.constantFrom("a", "b", "{", "}", "[", "]", '"', "\\", "\n", "é", "😀", " ", ":", ","), maxLength: 12 });

/** Random lines. */
export const lineSpecs = fc.array(
  fc.oneof(
    {
      weight: 12,
      arbitrary: fc.record({
        kind: fc.constant("entry" as const),
        type: fc.constantFrom(...ENTRY_KINDS),
        parent: fc.nat(1000),
        dup: fc.boolean().map((b) => b && Math.random() < 0.1),
        idFirst: fc.boolean().map((b) => b && Math.random() < 0.3),
        text,
        crlf: fc.boolean().map((b) => b && Math.random() < 0.1),
      }),
    },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant("header_patch" as const), text }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant("entry_patch" as const), target: fc.nat(1000), text }) },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant("invalid" as const), variant: fc.constantFrom(...INVALID_KINDS), cut: fc.nat(400), text }) },
    { weight: 1, arbitrary: fc.constant({ kind: "blank" as const }) },
  ),
  { maxLength: 40 },
);

/** Renders lines to bytes; `ids` carries the ids written so far (appends continue it). */
export class SessionWriter {
  readonly ids: string[] = [];
  #next = 0;
  #leaf: string | null = null;

  header(bom: boolean): Buffer {
    const line = JSON.stringify({ type: "session", version: 5, id: "sess", timestamp: "2026-01-01T00:00:00.000Z", cwd: "/w" }) + "\n";
    return Buffer.concat([bom ? Buffer.from([0xef, 0xbb, 0xbf]) : Buffer.alloc(0), Buffer.from(line)]);
  }

  render(specs: readonly LineSpec[]): Buffer {
    return Buffer.concat(specs.map((spec) => this.#line(spec)));
  }

  #pick(n: number): string | null {
    return this.ids.length === 0 ? null : this.ids[n % this.ids.length]!;
  }

  #record(type: EntryKind, parent: number, dup: boolean, body: string): Record<string, unknown> {
    const id = dup && this.ids.length > 0 ? this.#pick(parent)! : `e${this.#next++}`;
    // Mostly a chain from the last entry; sometimes a branch from an earlier one.
    const parentId = type === "root" ? null : parent % 4 === 0 ? this.#pick(parent) : this.#leaf;
    const base = { type: "message", id, parentId, timestamp: "2026-01-01T00:00:01.000Z" };
    this.ids.push(id);
    this.#leaf = id;
    switch (type) {
      case "user":
        return { ...base, message: { role: "user", content: [{ type: "text", text: body }], timestamp: 1 } };
      case "assistant":
        return {
          ...base,
          message: {
            role: "assistant",
            provider: "p",
            model: `m${parent % 3}`,
            content: [{ type: "text", text: body }],
            usage: { input: 1, output: 2, cacheRead: 0, cacheWrite: 0, totalTokens: 3, cost: { total: 0.5 } },
            timestamp: 2,
          },
        };
      case "thinking":
        return { ...base, type: "thinking_level_change", thinkingLevel: "high" };
      case "model":
        return { ...base, type: "model_change", model: `p/${body.length}` };
      case "compaction":
        return { ...base, type: "compaction", summary: body, firstKeptEntryId: this.#pick(parent * 7) ?? "none", tokensBefore: 10 };
      case "label":
        return { ...base, type: "label", targetId: this.#pick(parent * 3) ?? id, ...(parent % 3 === 0 ? {} : { label: `L${body}` }) };
      case "info":
        return { ...base, type: "session_info", name: body };
      case "custom":
        return { ...base, type: "custom", customType: "x", data: { body } };
      case "custom_message":
        return { ...base, type: "custom_message", customType: "x", content: body, display: true };
      case "branch_summary":
        return { ...base, type: "branch_summary", fromId: this.#pick(parent) ?? "root", summary: body };
      case "unknown_type":
        return { ...base, type: "future_thing", body };
      case "bad_fields":
        return { ...base, message: 5 };
      case "root":
        return { ...base, type: "custom", customType: "context_clear", data: {} };
    }
  }

  #line(spec: LineSpec): Buffer {
    switch (spec.kind) {
      case "blank":
        return Buffer.from("\n");
      case "header_patch":
        return Buffer.from(JSON.stringify({ type: "header_patch", patch: { title: `t${spec.text}` } }) + "\n");
      case "entry_patch":
        return Buffer.from(
          JSON.stringify({
            type: "entry_patch",
            entryId: this.#pick(spec.target) ?? "none",
            patch: { message: { role: "user", content: `patched ${spec.text}`, timestamp: 3 } },
          }) + "\n",
        );
      case "entry": {
        const record = this.#record(spec.type, spec.parent, spec.dup, spec.text);
        const ordered = spec.idFirst ? { id: record.id, ...record } : record;
        return Buffer.from(JSON.stringify(ordered) + (spec.crlf ? "\r\n" : "\n"));
      }
      case "invalid": {
        const record = JSON.stringify({
          type: "message",
          id: `x${this.#next++}`,
          parentId: this.#leaf,
          timestamp: "t",
          message: { role: "user", content: [{ type: "text", text: spec.text }], timestamp: 1 },
        });
        // Only the variants that hold a whole record take one (a record made but not written would leave its child's parent dangling).
        const other = ["glued", "nul", "torn_then_record"].includes(spec.variant) ? this.#record("user", spec.cut, false, spec.text) : {};
        switch (spec.variant) {
          case "garbage":
            return Buffer.from(`not json {${spec.text.replace(/\n/g, "")}\n`);
          case "torn":
            return Buffer.from(record.slice(0, 1 + (spec.cut % (record.length - 1))) + "\n");
          case "glued":
            return Buffer.from(record + JSON.stringify(other) + "\n");
          case "nul":
            return Buffer.concat([Buffer.from(JSON.stringify(other)), Buffer.alloc(1 + (spec.cut % 5)), Buffer.from("\n")]);
          case "non_utf8":
            return Buffer.concat([Buffer.from('{"type":"message","id":"bad'), Buffer.from([0xff, 0xfe]), Buffer.from(`","parentId":null}\n`)]);
          case "array":
            return Buffer.from("[1,2]\n");
          case "spaces":
            return Buffer.from("   \t \n");
          case "torn_then_record":
            return Buffer.from(record.slice(0, 1 + (spec.cut % (record.length - 1))) + JSON.stringify(other) + "\n");
        }
      }
    }
  }
}
