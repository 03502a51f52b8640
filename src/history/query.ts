/**
 * Text rules for prompt history: how a prompt is cleaned before it is stored, and how a user's
 * query becomes FTS5 expressions that can never be parsed as FTS syntax.
 */

/** Longest query (UTF-16 code units) `search` accepts; a longer one is a caller mistake. */
export const MAX_QUERY_LENGTH = 4096;
/** Most distinct tokens a query may hold; each one costs an FTS term lookup. */
export const MAX_QUERY_TOKENS = 32;
/**
 * The trigram index only knows substrings of at least three characters. Shorter tokens are
 * still checked in the substring pass, by a scan instead of an index.
 */
export const MIN_INDEXED_INFIX_CHARS = 3;

// A lone high surrogate not followed by a low one, or a low one not preceded by a high one.
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;
// Each SQLite driver encodes a lone surrogate its own way (better-sqlite3 as invalid UTF-8
// that reads back as three U+FFFD), and SQLite's LIKE/instr stop at NUL; both would make the
// stored text differ from what search and dedup compare, and from driver to driver. One
// U+FFFD per bad unit, before any driver sees the text, keeps lengths predictable.
const UNSTORABLE = /\u0000/g;

/** `text` with lone UTF-16 surrogates and NUL replaced by U+FFFD, otherwise unchanged. */
export function storableText(text: string): string {
  return text.replace(LONE_SURROGATE, "\uFFFD").replace(UNSTORABLE, "\uFFFD");
}

/**
 * The exact text that will be stored for `prompt`: {@link storableText}, trimmed. Returns ""
 * for a prompt that holds nothing worth keeping.
 */
export function normalizePrompt(prompt: string): string {
  return storableText(prompt).trim();
}

/**
 * Splits a query into lower-case search tokens: runs of letters and digits, first
 * occurrence kept, order preserved. Everything else (FTS operators, quotes, `*`, `:`,
 * parentheses, NUL) is a separator and so can never reach FTS5 as syntax.
 */
export function tokenizeQuery(query: string): string[] {
  const seen = new Set<string>();
  for (const raw of normalizePrompt(query).toLowerCase().split(/[^\p{L}\p{N}]+/u)) {
    if (raw !== "") seen.add(raw);
  }
  return [...seen];
}

/** One FTS5 string literal: double quotes inside are doubled, so no token can close it. */
function quoted(token: string): string {
  return `"${token.replaceAll('"', '""')}"`;
}

/** `"tok1"* "tok2"*`: every token as a prefix term, implicitly AND-ed. */
export function prefixMatchExpression(tokens: readonly string[]): string {
  return tokens.map((token) => `${quoted(token)}*`).join(" ");
}

/** Tokens long enough for the trigram index, and the rest. */
export function splitByInfixIndexability(tokens: readonly string[]): { indexed: string[]; scanned: string[] } {
  const indexed: string[] = [];
  const scanned: string[] = [];
  for (const token of tokens) {
    // Code points, not UTF-16 units: the trigram tokenizer counts characters.
    if ([...token].length >= MIN_INDEXED_INFIX_CHARS) indexed.push(token);
    else scanned.push(token);
  }
  return { indexed, scanned };
}

/**
 * A LIKE pattern matching `token` anywhere. Tokens hold only letters and digits, so LIKE's
 * wildcards cannot occur in them and no ESCAPE clause is needed; that matters, because FTS5
 * hands only a plain two-argument LIKE to the trigram index.
 */
export function containsLikePattern(token: string): string {
  return `%${token}%`;
}
