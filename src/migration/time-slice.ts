/**
 * Cooperative time slicing for loops of short synchronous steps (thousands of small files):
 * they run back to back, and give the event loop a turn once a slice has been used up.
 */
import { setImmediate as yieldToLoop } from "node:timers/promises";

/** Longest run of synchronous work between two event-loop turns (ms). */
export const SLICE_MS = 4;

/** Tracks how long synchronous work has run since the event loop last had a turn. */
export class TimeSlice {
  #since = performance.now();

  /** Gives the event loop a turn if this slice is used up; otherwise returns at once. */
  async yieldIfDue(): Promise<void> {
    if (performance.now() - this.#since < SLICE_MS) return;
    await yieldToLoop();
    this.#since = performance.now();
  }
}
