// Names and emails end up in terminals (the admin CLI), logs and e-mails. Characters a terminal
// acts on instead of showing — control characters, line and paragraph separators, bidirectional
// overrides — would let a stored name forge a line of output, colour or clear a terminal, or show
// text in another order than it is stored.

/**
 * C0 (U+0000–U+001F), DEL and C1 (U+007F–U+009F), the line and paragraph separators
 * (U+2028, U+2029) and the bidirectional embeddings, overrides and isolates (U+202A–U+202E,
 * U+2066–U+2069).
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point.
export const UNSAFE_TEXT_CHARACTERS = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;

/**
 * Characters that show nothing in a name: Unicode's format characters (Cf: zero-width space, joiners,
 * direction marks such as U+200E and U+061C, the byte order mark U+FEFF, tag characters) and the
 * other default-ignorable ones (Hangul fillers, variation selectors, the combining grapheme joiner).
 * "A" and "\uFEFFA" would otherwise be two names that look the same. Emoji sequences joined by
 * U+200D and emoji variation selectors are refused with them: a name is a label, not a message.
 */
export const INVISIBLE_TEXT_CHARACTERS = /[\p{Cf}\p{Default_Ignorable_Code_Point}]/u;

// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point.
const UNSAFE_TEXT_GLOBAL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

/** The text with every unsafe character shown as a visible `\uXXXX` escape (e.g. ESC as `\u001b`). */
export function escapeUnsafeText(text: string): string {
  return text.replace(UNSAFE_TEXT_GLOBAL, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

/**
 * JSON.stringify escapes C0 characters only; DEL, C1, the separators and bidi controls would stay
 * raw. They can only occur inside JSON strings, where `\uXXXX` is the same character, so the output
 * parses to the same value.
 */
export function safeJsonStringify(value: unknown): string {
  return escapeUnsafeText(JSON.stringify(value));
}
