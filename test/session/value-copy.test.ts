/**
 * `copyValue`, the deep copy the `/gjc` face hands contexts out through: for JSON-shaped values it must equal what
 * `structuredClone` makes and share no object with its source; other objects go through `structuredClone`.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { copyValue } from "../../src/session/value-copy.js";

/** Every object and array reachable from `value`. */
function objectsOf(value: unknown, into: Set<object> = new Set()): Set<object> {
  if (typeof value !== "object" || value === null || into.has(value)) return into;
  into.add(value);
  for (const child of Object.values(value)) objectsOf(child, into);
  return into;
}

describe("copyValue", () => {
  it("copies any JSON value as structuredClone does, sharing no object with the source", () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 6 }), (value) => {
        const copy = copyValue(value);
        expect(copy).toStrictEqual(structuredClone(value));
        const shared = [...objectsOf(copy)].filter((node) => objectsOf(value).has(node));
        expect(shared).toEqual([]);
      }),
      { numRuns: 300 },
    );
  });

  it("keeps undefined values and key order, and an own __proto__ key as an own key", () => {
    const parsed = JSON.parse('{"b":1,"__proto__":{"polluted":true},"a":[1,{"c":null}]}') as Record<string, unknown>;
    const source = { ...structuredClone(parsed), gone: undefined };
    Object.defineProperty(source, "__proto__", { value: parsed["__proto__"], enumerable: true, writable: true, configurable: true });
    const copy = copyValue(source) as Record<string, unknown>;
    expect(Object.getPrototypeOf(copy)).toBe(Object.prototype);
    expect(Object.keys(copy)).toEqual(Object.keys(source));
    expect(Object.hasOwn(copy, "gone")).toBe(true);
    expect(Object.getOwnPropertyDescriptor(copy, "__proto__")?.value).toEqual({ polluted: true });
    expect(({} as Record<string, unknown>)["polluted"]).toBeUndefined();
  });

  it("copies own keys only, in their order (integer keys first), leaving out keys inherited from a polluted Object.prototype and a non-enumerable one", () => {
    const source: Record<string, unknown> = JSON.parse('{"z":1,"10":2,"a":{"2":3,"1":4},"m":[{"k":5}]}');
    Object.defineProperty(source, "hidden", { value: 6, enumerable: false });
    const proto = Object.prototype as Record<string, unknown>;
    proto["injected"] = "from the prototype";
    try {
      const copy = copyValue(source) as Record<string, unknown>;
      expect(Object.keys(copy)).toEqual(["10", "z", "a", "m"]);
      expect(Object.keys(copy["a"] as object)).toEqual(["1", "2"]);
      expect(Object.hasOwn(copy, "injected")).toBe(false);
      expect(Object.hasOwn(copy["a"] as object, "injected")).toBe(false);
      expect(Object.hasOwn(copy, "hidden")).toBe(false);
      expect(copy).toEqual({ 10: 2, z: 1, a: { 1: 4, 2: 3 }, m: [{ k: 5 }] });
    } finally {
      delete proto["injected"];
    }
  });

  it("copies an object reached twice into two objects, so an edit of one leaves the other", () => {
    const usage = { input: 10, output: 20, cost: { total: 0.5 } };
    const copy = copyValue({ first: usage, second: usage });
    copy.first.cost.total = 99;
    expect(copy.second.cost.total).toBe(0.5);
    expect(usage.cost.total).toBe(0.5);
  });

  it("hands other objects to structuredClone: typed arrays, dates and class instances are copied, not shared", () => {
    class Point {
      constructor(readonly x: number) {}
    }
    const source = { bytes: new Uint8Array([1, 2, 3]), at: new Date(5), point: new Point(1), nullProto: Object.assign(Object.create(null), { k: [1] }) };
    const copy = copyValue(source);
    expect(copy.bytes).toEqual(new Uint8Array([1, 2, 3]));
    expect(copy.bytes).not.toBe(source.bytes);
    copy.bytes[0] = 9;
    expect(source.bytes[0]).toBe(1);
    expect(copy.at).toEqual(new Date(5));
    expect(copy.at).not.toBe(source.at);
    expect(copy.point).toEqual({ x: 1 });
    expect(Object.getPrototypeOf(copy.nullProto)).toBe(Object.prototype);
    expect(copy.nullProto.k).not.toBe(source.nullProto.k);
    expect(() => copyValue({ nested: new Map([["f", () => 1]]) })).toThrow(/clone/i);
  });
});
