// Entry depth bound: the deepest chain of nested objects (and of arrays) that `JSON.stringify`
// and `structuredClone` survive on the running runtime, from the top of the stack and from a
// caller already 2,000 frames deep, printed beside MAX_ENTRY_DEPTH, which must stay far below
// every figure on every supported runtime (run it under each: node, bun).
//
//   npm run build && node bench/value-depth.bench.mjs
//   npm run build && bun bench/value-depth.bench.mjs

import { MAX_ENTRY_DEPTH } from "../dist/index.js";

function chain(levels, array) {
  const top = array ? [] : {};
  let at = top;
  for (let i = 1; i < levels; i++) {
    const next = array ? [] : {};
    if (array) at.push(next);
    else at.level = next;
    at = next;
  }
  return top;
}

function survives(run) {
  try {
    run();
    return true;
  } catch {
    return false;
  }
}

/** The largest depth `run` survives (binary search up to 2^20). */
function deepest(run) {
  let low = 1;
  let high = 1 << 20;
  while (low + 1 < high) {
    const mid = (low + high) >> 1;
    if (survives(() => run(mid))) low = mid;
    else high = mid;
  }
  return low;
}

/** `run` called from `frames` nested calls, as from inside an agent loop. */
function from(frames, run) {
  return frames === 0 ? run() : from(frames - 1, run);
}

const runtime = typeof Bun === "undefined" ? `node ${process.version}` : `bun ${Bun.version}`;
console.log(`${runtime}: MAX_ENTRY_DEPTH = ${MAX_ENTRY_DEPTH}`);
for (const frames of [0, 2_000]) {
  for (const array of [false, true]) {
    const shape = array ? "arrays " : "objects";
    const stringify = deepest((n) => from(frames, () => JSON.stringify(chain(n, array))));
    const clone = deepest((n) => from(frames, () => structuredClone(chain(n, array))));
    const least = Math.min(stringify, clone);
    console.log(
      `  ${shape}, caller ${String(frames).padStart(5)} frames deep: stringify ${stringify}, structuredClone ${clone}: bound at 1/${(least / MAX_ENTRY_DEPTH).toFixed(1)} of the least`,
    );
  }
}
