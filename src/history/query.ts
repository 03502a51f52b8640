/** Text rules for prompt history: how a prompt is cleaned to be stored, and how a query becomes FTS5 expressions that are never FTS syntax. */

/** Longest query (UTF-16 code units) `search` accepts. */
export const MAX_QUERY_LENGTH = 4096;
/** Most distinct tokens a query may hold; each one costs an FTS term lookup. */
export const MAX_QUERY_TOKENS = 32;
// The trigram index only knows substrings of three or more characters; shorter tokens are
// checked by a scan of the rows the index narrowed down.
const MIN_INDEXED_INFIX_CHARS = 3;

// Each driver encodes a lone surrogate its own way, and LIKE/instr stop at NUL: either would make
// stored text differ from what search and dedup compare. So each bad unit becomes one U+FFFD first.
const UNSTORABLE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]|\u0000/g;

/** `text` with lone UTF-16 surrogates and NUL replaced by U+FFFD, otherwise unchanged. */
export function storableText(text: string): string {
  return text.replace(UNSTORABLE, "\uFFFD");
}

/** The exact text stored for `prompt`: {@link storableText}, trimmed ("" when nothing is left). */
export function normalizePrompt(prompt: string): string {
  return storableText(prompt).trim();
}

/** Lower-case search tokens of a query, first occurrences in order: runs of letters and digits (all else separates, so never reaches FTS5). */
export function tokenizeQuery(query: string): string[] {
  const seen = new Set<string>();
  for (const raw of normalizePrompt(query)
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)) {
    if (raw !== "") seen.add(raw);
  }
  return [...seen];
}

/** `"tok1"* "tok2"*`: every token a quoted prefix term (inner quotes doubled), implicitly AND-ed. */
export function prefixMatchExpression(tokens: readonly string[]): string {
  return tokens.map((token) => `"${token.replaceAll('"', '""')}"*`).join(" ");
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

/** A LIKE pattern matching `token` anywhere: tokens hold no LIKE wildcard, so no ESCAPE (FTS5 hands only a plain LIKE to the trigram index). */
export function containsLikePattern(token: string): string {
  return `%${token}%`;
}
