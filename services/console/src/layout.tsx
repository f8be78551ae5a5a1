import { type ReactNode, useEffect, useRef } from "react";
import { Link } from "./router.tsx";

export interface NavItem {
  to: string;
  label: string;
}

/** The current section: the item whose path starts the page's path (the longest one). */
function currentItem(nav: NavItem[], path: string): NavItem | undefined {
  return nav
    .filter((item) =>
      item.to === "/"
        ? path === "/" || !nav.some((other) => other.to !== "/" && path.startsWith(other.to))
        : path.startsWith(item.to),
    )
    .sort((a, b) => b.to.length - a.to.length)[0];
}

export function Layout({
  nav,
  path,
  who,
  onSignOut,
  children,
}: {
  nav: NavItem[];
  path: string;
  who: string;
  onSignOut: () => void;
  children: ReactNode;
}) {
  const main = useRef<HTMLElement>(null);
  const current = currentItem(nav, path);
  const first = useRef(true);
  // After a navigation, focus moves to the new page's content (as a page load would put it at the
  // top), so keyboard and screen reader users start there.
  useEffect(() => {
    if (first.current) {
      first.current = false;
      return;
    }
    main.current?.focus();
  }, [path]);
  return (
    <>
      <a className="skip-link" href="#main">
        Skip to content
      </a>
      <header className="top-bar">
        <span className="brand">
          <span className="brand-mark" aria-hidden="true">
            ◷
          </span>{" "}
          Punctual
        </span>
        <nav aria-label="Sections">
          <ul>
            {nav.map((item) => (
              <li key={item.to}>
                <Link to={item.to} aria-current={item === current ? "page" : undefined}>
                  {item.label}
                </Link>
              </li>
            ))}
          </ul>
        </nav>
        <div className="who">
          <span>{who}</span>
          <button type="button" onClick={onSignOut}>
            Sign out
          </button>
        </div>
      </header>
      <main id="main" ref={main} tabIndex={-1}>
        {children}
      </main>
    </>
  );
}
