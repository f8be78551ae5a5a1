import type { ReactNode } from "react";

/** The head of the column of each row's buttons: empty to the eye, named for screen readers. */
export function ActionsHeader() {
  return (
    <th scope="col">
      <span className="visually-hidden">Actions</span>
    </th>
  );
}

/** A row's cell of buttons, in the column under ActionsHeader. */
export function RowActions({ children }: { children: ReactNode }) {
  return (
    <td>
      <div className="row-actions">{children}</div>
    </td>
  );
}
