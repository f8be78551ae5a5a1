import type { ReactNode } from "react";

/**
 * A table's head: a column header a name; with `actions`, a last column for each row's buttons, empty
 * to the eye and named for screen readers.
 */
export function TableHead({ columns, actions = false }: { columns: readonly string[]; actions?: boolean }) {
  return (
    <thead>
      <tr>
        {columns.map((column) => (
          <th key={column} scope="col">
            {column}
          </th>
        ))}
        {actions && (
          <th scope="col">
            <span className="visually-hidden">Actions</span>
          </th>
        )}
      </tr>
    </thead>
  );
}

/** A row's cell of buttons, in the column a TableHead with `actions` names. */
export function RowActions({ children }: { children: ReactNode }) {
  return (
    <td>
      <div className="row-actions">{children}</div>
    </td>
  );
}
