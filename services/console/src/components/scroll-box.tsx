/**
 * Preformatted text (a payload, a response body) in a box that scrolls: the box takes focus so a
 * keyboard can scroll it, and its label names it for screen readers.
 */
export function ScrollBox({ label, text }: { label: string; text: string }) {
  return (
    // biome-ignore lint/a11y/noNoninteractiveTabindex: a scrolling box must be reachable by keyboard to be scrolled (WCAG 2.1.1)
    <section className="payload" aria-label={label} tabIndex={0}>
      <pre>{text}</pre>
    </section>
  );
}
