import { createElement, isValidElement, type ReactElement, type ReactNode } from "react";
import { renderToStaticMarkup } from "react-dom/server";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { Flow, FlowWithCounts } from "../../api/types.ts";
import { deleteFlow, listFlows, pauseOrResume, saveFlowLimits } from "./flow-calls.ts";
import { FlowEditor } from "./flow-editor.tsx";
import { flowFormOf } from "./flow-form.ts";
import { FlowDetail } from "./flow-link.tsx";
import { FlowRow, type FlowRowActions, FlowsTable, withChanges } from "./flows-page.tsx";

const NOW = Date.parse("2027-03-01T12:00:00.000Z");

const record = (change: Partial<Flow>): Flow => ({
  flowKey: "orders",
  rate: null,
  periodMs: 1_000,
  parallelism: null,
  paused: false,
  createdAt: "2027-02-01T09:00:00.000Z",
  updatedAt: "2027-02-01T09:00:00.000Z",
  ...change,
});

const flow = (change: Partial<FlowWithCounts>): FlowWithCounts => ({
  ...record({}),
  waiting: 0,
  inFlight: 0,
  oldestWaitingSince: null,
  ...change,
});

const FLOWS: FlowWithCounts[] = [
  flow({
    flowKey: "orders",
    rate: 5,
    parallelism: 2,
    waiting: 12,
    inFlight: 2,
    oldestWaitingSince: "2027-03-01T11:57:00.000Z",
  }),
  flow({ flowKey: "billing:eu", rate: 100, periodMs: 60_000, paused: true, waiting: 3 }),
  flow({ flowKey: "crm.sync", parallelism: 1, inFlight: 1 }),
  flow({ flowKey: "free" }),
];

const noActions: FlowRowActions = { onPauseOrResume: () => {}, onEdit: () => {}, onDelete: () => {} };

/** The text of each cell of each body row, tags and spaces between them dropped. */
function rowsOf(html: string): string[][] {
  const body = html.slice(html.indexOf("<tbody>"), html.indexOf("</tbody>"));
  return [...body.matchAll(/<tr[^>]*>(.*?)<\/tr>/g)].map(([, row = ""]) =>
    [...row.matchAll(/<t[hd][^>]*>(.*?)<\/t[hd]>/g)].map(([, cell = ""]) => cell.replace(/<[^>]+>/g, "").trim()),
  );
}

/** The element with this aria-label in a rendered tree (a component without hooks called as a function). */
function findByLabel(node: ReactNode, label: string): ReactElement<{ onClick?: () => void }> | undefined {
  if (Array.isArray(node)) {
    for (const child of node) {
      const found = findByLabel(child, label);
      if (found) return found;
    }
    return undefined;
  }
  if (!isValidElement<{ "aria-label"?: string; children?: ReactNode }>(node)) return undefined;
  if (node.props["aria-label"] === label) return node as ReactElement<{ onClick?: () => void }>;
  return findByLabel(node.props.children, label);
}

describe("the flows table", () => {
  const html = renderToStaticMarkup(
    createElement(FlowsTable, { flows: FLOWS, now: NOW, picked: "billing:eu", actions: noActions }),
  );

  it("lists each flow with its limits in words, its state, what waits and how long", () => {
    expect(rowsOf(html)).toEqual([
      ["orders", "● Running", "5 per second, at most 2 at once", "12", "2", "3 min ago", "PauseEditDelete"],
      ["billing:eu", "‖ Paused", "100 per minute", "3", "0", "—", "ResumeEditDelete"],
      ["crm.sync", "● Running", "at most 1 at once", "0", "1", "—", "PauseEditDelete"],
      ["free", "● Running", "no limit", "0", "0", "—", "PauseEditDelete"],
    ]);
  });

  it("names each button with its flow, and picks out the flow the page was opened for", () => {
    expect(html).toContain('aria-label="Pause flow orders"');
    expect(html).toContain('aria-label="Resume flow billing:eu"');
    expect(html).toContain('aria-label="Delete flow crm.sync"');
    expect(html.match(/<tr class="picked" aria-current="true"><th scope="row"[^>]*>([^<]*)</)?.[1]).toBe("billing:eu");
    // The oldest waiting delivery's time is there for assistive tech and on hover.
    expect(html).toContain('dateTime="2027-03-01T11:57:00.000Z"');
  });

  it("disables the buttons of a flow whose action is under way", () => {
    const busy = renderToStaticMarkup(
      createElement(FlowsTable, { flows: FLOWS.slice(0, 2), now: NOW, busyKey: "orders", actions: noActions }),
    );
    const [orders = "", billing = ""] = busy.split("</tr>").slice(1);
    expect(orders.match(/disabled=""/g)).toHaveLength(3);
    expect(billing).not.toContain("disabled");
  });

  it("asks the page to pause a running flow and to resume a paused one", () => {
    const onPauseOrResume = vi.fn();
    const actions = { ...noActions, onPauseOrResume };
    const [running, paused] = FLOWS;
    if (!running || !paused) throw new Error("two flows expected");
    const pause = findByLabel(
      FlowRow({ flow: running, now: NOW, picked: false, busy: false, actions }),
      "Pause flow orders",
    );
    pause?.props.onClick?.();
    const resume = findByLabel(
      FlowRow({ flow: paused, now: NOW, picked: false, busy: false, actions }),
      "Resume flow billing:eu",
    );
    resume?.props.onClick?.();
    expect(onPauseOrResume.mock.calls).toEqual([[running], [paused]]);
  });
});

describe("the flows shown after an action", () => {
  const updatedAt = "2027-03-01T12:00:01.000Z";

  it("take the answered record over the listed one, keeping the listed counts, until the next list", () => {
    const list = FLOWS.slice(0, 3);
    const shown = withChanges(list, {
      list,
      flows: {
        orders: record({ flowKey: "orders", rate: 5, parallelism: 2, paused: true, updatedAt }),
        "billing:eu": null,
        "new.one": record({ flowKey: "new.one", rate: 1, periodMs: 60_000, updatedAt }),
      },
    });
    expect(shown.map(({ flowKey, paused, waiting, inFlight }) => [flowKey, paused, waiting, inFlight])).toEqual([
      ["orders", true, 12, 2],
      ["crm.sync", false, 0, 1],
      ["new.one", false, 0, 0],
    ]);
    expect(withChanges([...list], { list, flows: { "billing:eu": null } })).toEqual(list);
  });
});

describe("the Flows page's calls", () => {
  const calls: { method: string; url: string; body: unknown }[] = [];
  const answer = (status: number, body?: unknown) =>
    vi.fn(async (url: string, init: RequestInit) => {
      calls.push({ method: init.method ?? "GET", url, body: init.body ? JSON.parse(String(init.body)) : undefined });
      return new Response(body === undefined ? null : JSON.stringify(body), {
        status,
        headers: { "content-type": "application/json" },
      });
    });

  afterEach(() => {
    calls.length = 0;
    vi.unstubAllGlobals();
  });

  it("pause a running flow and resume a paused one, each answering the flow as it is now", async () => {
    const paused = record({ flowKey: "billing:eu", paused: true });
    vi.stubGlobal("fetch", answer(200, paused));
    await expect(pauseOrResume({ flowKey: "billing:eu", paused: false })).resolves.toEqual(paused);
    await pauseOrResume({ flowKey: "billing:eu", paused: true });
    expect(calls).toEqual([
      { method: "POST", url: "/api/flows/billing%3Aeu/pause", body: {} },
      { method: "POST", url: "/api/flows/billing%3Aeu/resume", body: {} },
    ]);
  });

  it("save limits with PUT, delete with DELETE and list with GET", async () => {
    vi.stubGlobal("fetch", answer(200, record({ rate: 5 })));
    await saveFlowLimits("orders", { rate: 5, periodMs: 1_000, parallelism: null });
    await listFlows();
    vi.stubGlobal("fetch", answer(204));
    await expect(deleteFlow("orders")).resolves.toBeUndefined();
    expect(calls).toEqual([
      { method: "PUT", url: "/api/flows/orders", body: { rate: 5, periodMs: 1_000, parallelism: null } },
      { method: "GET", url: "/api/flows", body: undefined },
      { method: "DELETE", url: "/api/flows/orders", body: undefined },
    ]);
  });

  it("fail with the API's own sentence", async () => {
    vi.stubGlobal("fetch", answer(403, { message: "Flow limit of 100 reached for this organization" }));
    await expect(saveFlowLimits("one-more", { rate: 1 })).rejects.toThrow(
      "Flow limit of 100 reached for this organization",
    );
  });
});

describe("the flow form", () => {
  const render = (props: Partial<Parameters<typeof FlowEditor>[0]>) =>
    renderToStaticMarkup(
      createElement(FlowEditor, {
        initial: flowFormOf(record({ flowKey: "orders", rate: 100, periodMs: 60_000, parallelism: 2 })),
        submitLabel: "Save the limits",
        onSaved: () => {},
        ...props,
      }),
    );

  it("says the limits it would save as the table says them, and that they replace a flow's limits", () => {
    const html = render({ knownKeys: ["orders"] });
    expect(html).toContain(
      "Limits: 100 per minute, at most 2 at once. Flow orders has limits already: saving replaces them.",
    );
    expect(html).toContain('<option value="60000" selected="">minutes</option>');
  });

  it("leaves the key out when it edits one flow's limits", () => {
    const html = render({ fixedKey: true, knownKeys: ["orders"] });
    expect(html).not.toContain("Flow key");
    expect(html).not.toContain("has limits already");
  });
});

describe("a record's flow", () => {
  it("links to the Flows page with the flow picked out, and is absent without one", () => {
    expect(renderToStaticMarkup(createElement(FlowDetail, { flowKey: "billing:eu" }))).toBe(
      '<div><dt>Flow</dt><dd><a href="/console/flows?flow=billing%3Aeu" class="mono">billing:eu</a></dd></div>',
    );
    expect(renderToStaticMarkup(createElement(FlowDetail, { flowKey: null }))).toBe("");
  });
});
