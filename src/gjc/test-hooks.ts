/**
 * GJC's `SessionManagerTestHooks`: fault-injection points of the `/gjc` manager, for tests that
 * check what a failed transition leaves behind. Each one the face calls is listed here with the
 * point it runs at; a hook that throws fails the operation there.
 */

/** The fault-injection points; unset ones cost nothing. */
export interface SessionManagerTestHookPoints {
  /**
   * Runs when `setSessionFile` begins a switch to another session, after its own checks and
   * before the current session lets go of anything (its file, its artifacts). Throwing fails the
   * switch with the current session exactly as it was.
   */
  beforeResidentTransitionIndexBuild?: () => void;
}

/** The one set of hook points, shared by every manager of the process; tests set and clear its fields. */
export const SessionManagerTestHooks: SessionManagerTestHookPoints = {};
