import { createElement } from "react";
import { renderToStaticMarkup } from "react-dom/server";
import { describe, expect, it } from "vitest";
import { EventsTable } from "./events-page.tsx";
import { LabelTags } from "./outcome-details.tsx";
import { eventRecord } from "./record-fixtures.ts";

const event = eventRecord;

/** The first cell of each body row: the event's id, then its tags' texts (a replay's, its labels). */
function eventCells(html: string): { id: string; tags: string[] }[] {
  const body = html.slice(html.indexOf("<tbody>"), html.indexOf("</tbody>"));
  return [...body.matchAll(/<tr[^>]*><td[^>]*>(.*?)<\/td>/g)].map(([, cell = ""]) => ({
    id: /<a [^>]*>([^<]*)<\/a>/.exec(cell)?.[1] ?? "",
    tags: [...cell.matchAll(/<span class="tag[^"]*"[^>]*>([^<]*)<\/span>/g)].map(([, text = ""]) => text),
  }));
}

describe("the events list", () => {
  it("shows each event's labels as key:value chips under its id, and none for an event without labels", () => {
    const html = renderToStaticMarkup(
      createElement(EventsTable, {
        events: [
          event({ id: "evt_1", labels: { customer: "42", plan: "pro" } }),
          event({ id: "evt_2" }),
          event({ id: "evt_3", replayOf: "evt_1", status: "Sent", labels: { customer: "42" } }),
        ],
      }),
    );
    expect(eventCells(html)).toEqual([
      { id: "evt_1", tags: ["customer:42", "plan:pro"] },
      { id: "evt_2", tags: [] },
      { id: "evt_3", tags: ["replay", "customer:42"] },
    ]);
    // The chips sit in the id's cell: the table keeps its four columns (and a phone its card).
    expect(html.match(/<th scope="col">/g)).toHaveLength(4);
  });

  it("keeps a long label whole in its chip's title, for the chip may be cut short on screen", () => {
    const value = "v".repeat(256);
    const html = renderToStaticMarkup(createElement(LabelTags, { labels: { campaign: value } }));
    expect(html).toBe(
      `<span class="label-tags"><span class="tag mono" title="campaign:${value}">campaign:${value}</span></span>`,
    );
    expect(renderToStaticMarkup(createElement(LabelTags, { labels: {} }))).toBe("");
  });
});
