import { REDACTED } from "./describe-policy.ts";

// Headers as a form edits them: rows of name and value, turned into the API's object on submit.

export interface HeaderRow {
  /** The row's React key: stays with the row when another is removed. */
  key: number;
  name: string;
  value: string;
  /** Loaded as "[redacted]": the console has no value to show, so the row's value must be entered again. */
  hidden: boolean;
}

let lastKey = 0;

export function newHeaderRow(name = "", value = ""): HeaderRow {
  lastKey += 1;
  return { key: lastKey, name, value, hidden: false };
}

/** A stored header object as rows; a redacted value becomes an empty, hidden row's value. */
export function headerRowsOf(headers: Record<string, string> | undefined): HeaderRow[] {
  return Object.entries(headers ?? {}).map(([name, value]) =>
    value === REDACTED ? { ...newHeaderRow(name), hidden: true } : newHeaderRow(name, value),
  );
}

export type HeadersOutcome = { headers: Record<string, string> | undefined } | { problem: string };

/**
 * The rows as the API's `headers` object, with blank rows left out; undefined when none is left.
 * A hidden row not entered again, a value without a name or a name given twice is a problem: the
 * name-and-value rules themselves are the API's, which answers each with its own sentence.
 */
export function headersOf(rows: readonly HeaderRow[]): HeadersOutcome {
  const headers: Record<string, string> = {};
  for (const row of rows) {
    const name = row.name.trim();
    if (name === "" && row.value === "") continue;
    if (name === "") return { problem: `The header with the value '${row.value}' has no name` };
    if (row.hidden && row.value === "") {
      return { problem: `Enter the value of the header '${name}' again: it is never shown, and a save replaces it` };
    }
    if (Object.hasOwn(headers, name)) return { problem: `The header '${name}' is given twice` };
    headers[name] = row.value;
  }
  return { headers: Object.keys(headers).length > 0 ? headers : undefined };
}
