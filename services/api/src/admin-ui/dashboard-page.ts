import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";

// Bull Board's page (its template, index.ejs) links a stylesheet of a public font service: offline
// the page waits on it, online each opening tells that service who looks at the queues. The page is
// still rendered from Bull Board's own template, with every <link> to another host left out (its CSS
// then falls back to system fonts, as /docs does: `withDefaultFonts` in openapi/docs-routes.ts), and
// served with a policy that lets the browser load nothing from anywhere but this origin.

/** Bull Board's Express adapter, which renders the page: its ejs and its UI package are the ones used here. */
const requireFromBoard = createRequire(createRequire(import.meta.url).resolve("@bull-board/express"));

/** The page's template, where @bull-board/api looks for it (`uiBasePath`'s default). */
export const DASHBOARD_TEMPLATE = path.join(
  path.dirname(requireFromBoard.resolve("@bull-board/ui/package.json")),
  "dist",
  "index.ejs",
);

/** The part of ejs the page needs (the package ships no types). */
interface Ejs {
  renderFile(file: string, data: object, callback: (error: Error | null, html?: string) => void): void;
}

/**
 * A `<link>` (stylesheet, preconnect, icon) whose address names a host. Bull Board addresses its own
 * files relative to the page's `<base>`, so such a link is to another host.
 */
const LINK_TO_ANOTHER_HOST = /<link\b[^>]*\bhref\s*=\s*["']?(?:[a-z][a-z\d+.-]*:)?\/\/[^>]*>\s*/gi;

/** The page as Bull Board renders it, without the elements that would load something from another host. */
export function withoutOtherHosts(html: string): string {
  return html.replace(LINK_TO_ANOTHER_HOST, "");
}

/**
 * An Express view engine for the dashboard's app: Bull Board's own rendering (ejs, as its adapter
 * registers it), then `withoutOtherHosts`. Registered in place of the adapter's after the board is
 * created (queue-dashboard.ts).
 */
export function localOnlyEngine() {
  const ejs = requireFromBoard("ejs") as Ejs;
  return (file: string, options: object, callback: (error: unknown, html?: string) => void) => {
    ejs.renderFile(file, options, (error, html) =>
      callback(error, html === undefined ? html : withoutOtherHosts(html)),
    );
  };
}

const sha256 = (text: string) => `'sha256-${createHash("sha256").update(text, "utf8").digest("base64")}'`;

/**
 * The template's inline styles — the loading indicator's `<style>` element and `style` attributes,
 * which hold no template tags — as CSP hashes. An attribute is hashed as it is written, which is its
 * value: the template spells none with character references.
 */
function inlineStyleHashes(template: string): string[] {
  const elements = [...template.matchAll(/<style>([^<]*)<\/style>/g)].map((match) => match[1] ?? "");
  const attributes = [...template.matchAll(/\sstyle="([^"]*)"/g)].map((match) => match[1] ?? "");
  return [...new Set([...elements, ...attributes].filter((style) => !style.includes("<%")))].map(sha256);
}

/**
 * The Redis logo in Bull Board's header draws its colours with a `<style>` element of its own, made
 * by its main script (@bull-board/ui 9.10.1). A version that changes it fails the browser check
 * (test/browser/operator-pages.test.ts), whose message names the hash to put here.
 */
const LOGO_STYLE_HASH = "'sha256-r2N1TB/gHbBtBZFKg7ejmq1acVSREzucTAEw6ga4hoU='";

/**
 * The dashboard's Content-Security-Policy (without `frame-ancestors`, which noFraming adds): this
 * origin only. Scripts are Bull Board's files (its configuration sits in a `type="application/json"`
 * script, which is data, not run); inline styles are allowed by their hashes alone, the template's
 * and the logo's, so a style attribute (`'unsafe-hashes'`) is allowed only when it is the template's own.
 */
export function dashboardContentSecurityPolicy(template = readFileSync(DASHBOARD_TEMPLATE, "utf8")): string[] {
  return [
    "default-src 'self'",
    "script-src 'self'",
    ["style-src 'self' 'unsafe-hashes'", ...inlineStyleHashes(template), LOGO_STYLE_HASH].join(" "),
    "img-src 'self' data:",
    "font-src 'self'",
    "connect-src 'self'",
    "object-src 'none'",
    "base-uri 'self'",
    "form-action 'self'",
  ];
}
