/**
 * The CLI's one output sanitizer. Sessions hold text nobody on the machine chose (model output, tool output, web
 * pages, file names from cloned repositories); a terminal acts on some of its characters. Every character that can
 * act or hide is shown as inert text instead:
 * - controls (C0, DEL, C1; tab and newline included: the layout never takes them from content) as `\xNN`;
 * - format characters (bidi marks, embeddings, overrides and isolates, zero-width spaces and joiners, the BOM,
 *   invisible operators, tags), line and paragraph separators, lone surrogates and the invisible fillers as `<U+XXXX>`.
 * `--json` escapes the same characters as `\uXXXX`, so the document stays valid and parses back to the stored text.
 *
 * It lives in the CLI: library messages and reports are data (a caller shows them its own way); printing them for a
 * person is where they become dangerous.
 */

/** The characters shown escaped: controls, format characters, line/paragraph separators, lone surrogates, invisible fillers. */
const UNSAFE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}\u034f\u115f\u1160\u3164\uffa0]/gu;

function hex(code: number, width: number): string {
  return code.toString(16).toUpperCase().padStart(width, "0");
}

/** `text` with every character that could act on or hide from a terminal made visible (`\x1b`, `<U+202E>`). */
export function printable(text: string): string {
  return text.replace(UNSAFE, (char) => {
    const code = char.codePointAt(0) as number;
    return code <= 0x9f ? `\\x${hex(code, 2).toLowerCase()}` : `<U+${hex(code, 4)}>`;
  });
}

/** `value` as indented JSON with the characters {@link printable} escapes written as `\uXXXX` (the layout's own newlines kept). */
export function jsonText(value: unknown): string {
  // JSON.stringify already escapes C0 inside strings and lone surrogates; what is left raw is the layout (newline,
  // space) and, inside strings only, DEL, C1 and the format characters, which any string may spell as `\uXXXX`.
  return (JSON.stringify(value, null, 2) ?? "null").replace(UNSAFE, (char) =>
    char === "\n" ? char : Array.from({ length: char.length }, (_, i) => `\\u${hex(char.charCodeAt(i), 4).toLowerCase()}`).join(""),
  );
}
