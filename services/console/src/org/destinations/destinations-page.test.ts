import { createElement } from "react";
import { renderToStaticMarkup } from "react-dom/server";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { Destination } from "../../api/types.ts";
import { listDestinations, resetDestination } from "./destination-calls.ts";
import { DestinationsTable } from "./destinations-page.tsx";

const NOW = Date.parse("2027-03-01T12:00:00.000Z");

const DESTINATIONS: Destination[] = [
  {
    origin: "https://hooks.example.com",
    state: "Unhealthy",
    consecutiveFailures: 23,
    since: "2027-03-01T11:50:00.000Z",
    waiting: 41,
    oldestWaitingSince: "2027-03-01T11:50:30.000Z",
  },
  {
    origin: "https://api.example.org:8443",
    state: "Healthy",
    consecutiveFailures: 0,
    since: "2027-02-27T08:00:00.000Z",
    waiting: 0,
    oldestWaitingSince: null,
  },
];

function rowsOf(html: string): string[][] {
  const body = html.slice(html.indexOf("<tbody>"), html.indexOf("</tbody>"));
  return [...body.matchAll(/<tr[^>]*>(.*?)<\/tr>/g)].map(([, row = ""]) =>
    [...row.matchAll(/<t[hd][^>]*>(.*?)<\/t[hd]>/g)].map(([, cell = ""]) => cell.replace(/<[^>]+>/g, "").trim()),
  );
}

describe("the destinations table", () => {
  const html = renderToStaticMarkup(
    createElement(DestinationsTable, { destinations: DESTINATIONS, now: NOW, onReset: () => {} }),
  );

  it("lists each origin with its state, failures in a row, what waits and how long", () => {
    const rows = rowsOf(html);
    expect(
      rows.map(([origin, state, failures, , waiting, oldest, actions]) => [
        origin,
        state,
        failures,
        waiting,
        oldest,
        actions,
      ]),
    ).toEqual([
      ["https://hooks.example.com", "✕ Unhealthy", "23", "41", "9 min ago", "Reset"],
      ["https://api.example.org:8443", "✓ Healthy", "0", "0", "—", ""],
    ]);
    expect(html).toContain('dateTime="2027-03-01T11:50:00.000Z"');
  });

  it("offers a Reset only for an Unhealthy origin, named with it", () => {
    expect(html.match(/aria-label="Reset [^"]*"/g)).toEqual([
      'aria-label="Reset https://hooks.example.com to Healthy"',
    ]);
  });
});

describe("the Destinations page's calls", () => {
  const calls: { method: string; url: string; body: unknown }[] = [];
  afterEach(() => {
    calls.length = 0;
    vi.unstubAllGlobals();
  });

  it("list with GET and reset an origin with POST, answering its record", async () => {
    const healthy = { ...DESTINATIONS[0], state: "Healthy", consecutiveFailures: 0 };
    vi.stubGlobal(
      "fetch",
      vi.fn(async (url: string, init: RequestInit) => {
        calls.push({ method: init.method ?? "GET", url, body: init.body ? JSON.parse(String(init.body)) : undefined });
        return new Response(JSON.stringify(url.endsWith("/reset") ? healthy : DESTINATIONS), { status: 200 });
      }),
    );
    await expect(listDestinations()).resolves.toEqual(DESTINATIONS);
    await expect(resetDestination("https://hooks.example.com")).resolves.toEqual(healthy);
    expect(calls).toEqual([
      { method: "GET", url: "/api/destinations", body: undefined },
      { method: "POST", url: "/api/destinations/reset", body: { origin: "https://hooks.example.com" } },
    ]);
  });
});
