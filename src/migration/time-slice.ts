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
    if (this.due()) await this.yield();
  }

  /**
   * True once this slice is used up. For hot loops: `if (slice.due()) await slice.yield()`
   * costs no promise on the steps that do not yield.
   */
  due(): boolean {
    return performance.now() - this.#since >= SLICE_MS;
  }

  /** Gives the event loop a turn and starts a new slice. */
  async yield(): Promise<void> {
    await yieldToLoop();
    this.#since = performance.now();
  }
}
