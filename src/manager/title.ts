/** Session titles as stored: one bounded line of printable text that cannot smuggle terminal controls. */

/** Longest stored title, in UTF-16 code units. */
const MAX_SESSION_TITLE_CHARS = 1000;

/** Who set a title. A user's title is never replaced by an automatic one. */
export type TitleSource = "auto" | "user";

// C0, DEL and C1 controls become spaces, so embedded newlines or escapes still read as one line.
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/g;
const WHITESPACE_RUN = /\s+/g;

/** The stored form of a title: controls to spaces, whitespace runs collapsed, trimmed, cut to {@link MAX_SESSION_TITLE_CHARS} (never in a surrogate pair); `""` if nothing is left. */
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
