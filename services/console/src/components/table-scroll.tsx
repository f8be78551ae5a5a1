import type { ReactNode } from "react";

/**
 * A table that scrolls sideways on a narrow window instead of widening the page. The box takes the
 * focus so a keyboard can scroll it too, and its label says which table it holds.
 */
export function TableScroll({ label, children }: { label: string; children: ReactNode }) {
  return (
    // biome-ignore lint/a11y/noNoninteractiveTabindex: a scrolling box must be reachable by keyboard to be scrolled (WCAG 2.1.1)
    <section className="table-scroll" aria-label={label} tabIndex={0}>
      {children}
    </section>
  );
}
