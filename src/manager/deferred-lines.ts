/**
 * The views of a session opened through its line index that make what they show when first asked: its lines, its
 * usage totals and an entry's line, so an open costs the path and a rewrite or copy pays for the rest.
 */
import { UsageAccumulator, type FileEntry, type SessionTree } from "../session/index.js";
import type { ManagedLine } from "./lines.js";

/**
 * A line view of `count` lines whose line `i` is made by `make(i)` when first reached, so lines
 * off the path cost nothing until a rewrite or a copy walks them. Every array operation works
 * on it (the lines are always present to `in`); lines pushed later are stored as they are.
 */
export function deferredLines(count: number, make: (i: number) => ManagedLine): ManagedLine[] {
  const held: ManagedLine[] = [];
  // Sized by its last slot, not by `length` (which fills every hole at once): a resume reaches few lines.
  if (count > 0) (held as (ManagedLine | undefined)[])[count - 1] = undefined;
  const index = (key: string | symbol): number => {
    if (typeof key !== "string" || key.length === 0 || key.charCodeAt(0) < 0x30 || key.charCodeAt(0) > 0x39) return -1;
    const i = Number(key);
    return i < count && String(i) === key ? i : -1;
  };
  // Appends push through here on every line: Array.prototype.push run on the proxy would pass each of its
  // steps (read push, read length, set the slot, set length) through the traps.
  const push = (...lines: ManagedLine[]): number => Array.prototype.push.apply(held, lines);
  return new Proxy(held, {
    get(target, key, receiver) {
      if (key === "push") return push;
      const i = index(key);
      if (i !== -1 && target[i] === undefined) target[i] = make(i);
      return Reflect.get(target, key, receiver);
    },
    has(target, key) {
      return index(key) !== -1 || Reflect.has(target, key);
    },
  });
}

/** Usage totals over the loaded entries, summed when first asked for, plus every append. */
export class DeferredUsage extends UsageAccumulator {
  #prime: (() => Iterable<FileEntry>) | undefined;

  constructor(prime: () => Iterable<FileEntry>) {
    super();
    this.#prime = prime;
  }

  override totals(): ReturnType<UsageAccumulator["totals"]> {
    this.#primed();
    return super.totals();
  }

  override get skipped(): number {
    this.#primed();
    return super.skipped;
  }

  #primed(): void {
    const entries = this.#prime?.() ?? [];
    this.#prime = undefined;
    for (const entry of entries) super.add(entry);
  }
}

/** An entry line whose entry is read when first needed; a class, not a getter literal, because a rewrite or copy builds one per line. */
export class DeferredEntryLine {
  readonly kind = "entry";
  readonly #tree: SessionTree;
  readonly #position: number;

  constructor(tree: SessionTree, position: number) {
    this.#tree = tree;
    this.#position = position;
  }

  get entry(): FileEntry {
    return this.#tree.index.entriesAt([this.#position])[0]!;
  }
}
