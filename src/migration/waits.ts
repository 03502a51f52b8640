/**
 * A migration is written once and run two ways: by GJC's asynchronous callers, which keep the event loop free while
 * files are synced and another process's migration is waited for, and by pi's factories, which are synchronous. Each
 * step that may wait is yielded as a {@link Wait}; {@link runNow} does it on the spot, {@link runLater} awaits it.
 */

/** One step that may wait, in both forms. */
export interface Wait<T = unknown> {
  /** The step, done on this thread before returning. */
  readonly now: () => T;
  /** The same step, off the event loop. */
  readonly later: () => Promise<T>;
}

/** Migration steps: a generator yielding its waits, returning `R`. */
export type Steps<R> = Generator<Wait, R, unknown>;

/** Yields `step` to the driver and returns its result (`yield* wait(...)`). */
export function* wait<T>(step: Wait<T>): Generator<Wait, T, unknown> {
  return (yield step) as T;
}

/** Runs `steps` to the end on this thread: each wait is done synchronously, its failure thrown into the steps. */
export function runNow<R>(steps: Steps<R>): R {
  let next = steps.next();
  while (!next.done) {
    let value: unknown;
    try {
      value = next.value.now();
    } catch (error) {
      next = steps.throw(error);
      continue;
    }
    next = steps.next(value);
  }
  return next.value;
}

/** Runs `steps` to the end, awaiting each wait; its failure is thrown into the steps. */
export async function runLater<R>(steps: Steps<R>): Promise<R> {
  let next = steps.next();
  while (!next.done) {
    let value: unknown;
    try {
      value = await next.value.later();
    } catch (error) {
      next = steps.throw(error);
      continue;
    }
    next = steps.next(value);
  }
  return next.value;
}
