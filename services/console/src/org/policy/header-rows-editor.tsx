import { useId } from "react";
import { type HeaderRow, newHeaderRow } from "./header-rows.ts";

/** Name and value rows of request headers, each removable, and a button that adds one. */
export function HeaderRowsEditor({ rows, onChange }: { rows: HeaderRow[]; onChange: (rows: HeaderRow[]) => void }) {
  const hintId = useId();
  const update = (key: number, change: Partial<HeaderRow>) =>
    onChange(rows.map((row) => (row.key === key ? { ...row, ...change } : row)));
  const hasHidden = rows.some((row) => row.hidden);
  return (
    <fieldset className="header-rows">
      <legend>Headers</legend>
      {hasHidden && (
        <p id={hintId} className="hint">
          Secret values (Authorization, Cookie, names with token, secret, key or password) are never shown: enter them
          again to save, or remove their header.
        </p>
      )}
      {rows.length === 0 && <p className="hint">No extra header.</p>}
      {rows.map((row, index) => (
        <div className="header-row" key={row.key}>
          <input
            aria-label={`Header ${index + 1} name`}
            className="mono"
            placeholder="X-Source"
            spellCheck={false}
            value={row.name}
            onChange={(event) => update(row.key, { name: event.target.value })}
          />
          <input
            aria-label={`Header ${index + 1} value`}
            aria-describedby={row.hidden ? hintId : undefined}
            className="mono"
            placeholder={row.hidden ? "hidden: enter it again" : "value"}
            required={row.hidden}
            spellCheck={false}
            value={row.value}
            onChange={(event) => update(row.key, { value: event.target.value })}
          />
          <button
            type="button"
            aria-label={`Remove header ${index + 1}${row.name ? ` (${row.name})` : ""}`}
            onClick={() => onChange(rows.filter((other) => other.key !== row.key))}
          >
            Remove
          </button>
        </div>
      ))}
      <button type="button" onClick={() => onChange([...rows, newHeaderRow()])}>
        Add a header
      </button>
    </fieldset>
  );
}
