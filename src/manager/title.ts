/**
 * Session titles as they are stored: one line of printable text, bounded, and never able to
 * smuggle control sequences into a terminal session picker.
 */

/** Longest stored title, in UTF-16 code units. */
export const MAX_SESSION_TITLE_CHARS = 1000;

/** Who set a title. A user's title is never replaced by an automatic one. */
export type TitleSource = "auto" | "user";

// C0 controls, DEL and C1 controls become spaces; runs of whitespace then collapse, so a
// title with embedded newlines or escape sequences still reads as one line.
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/g;
const WHITESPACE_RUN = /\s+/g;

/**
 * The stored form of a title: control characters replaced by spaces, whitespace runs collapsed
 * to one space, trimmed, and cut to {@link MAX_SESSION_TITLE_CHARS} (never in the middle of a
 * surrogate pair). Returns `""` when nothing printable is left.
 */
export function sanitizeSessionTitle(raw: string): string {
  const collapsed = raw.replace(CONTROL, " ").replace(WHITESPACE_RUN, " ").trim();
  if (collapsed.length <= MAX_SESSION_TITLE_CHARS) return collapsed;
  let end = MAX_SESSION_TITLE_CHARS;
  const last = collapsed.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end -= 1;
  return collapsed.slice(0, end).trimEnd();
}

/** Whether a title from `incoming` may replace one set by `current`: only auto never beats user. */
export function titleMayReplace(current: TitleSource | undefined, incoming: TitleSource): boolean {
  return !(current === "user" && incoming === "auto");
}
