import { request as httpRequest, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import express, { type Express, type NextFunction, type Request, type Response } from "express";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { errorHandler } from "../src/middleware/errors.ts";
import { jsonBody, MAX_BODY_BYTES } from "../src/middleware/json-body.ts";

// jsonBody reads a plain UTF-8 body that has fully arrived itself, and leaves every other one to
// body-parser: both ways must give the same answers. Each body is sent over a real socket to an
// app using jsonBody and to one using body-parser alone, after a pause (as the API key check makes
// one), and the answers are compared.

const parseJson = express.json({ limit: MAX_BODY_BYTES, strict: false, type: () => true });
const pause = (_req: Request, _res: Response, next: NextFunction) => setTimeout(next, 5);
const echo = (req: Request, res: Response) => res.json({ body: req.body === undefined ? "undefined" : req.body });

function app(parser: express.RequestHandler): Express {
  const built = express();
  built.post("/", pause, parser, echo);
  built.use(errorHandler());
  return built;
}

let servers: Server[];
let ports: number[];

beforeAll(async () => {
  servers = [app(jsonBody()), app(parseJson)].map((built) => built.listen(0, "127.0.0.1"));
  await Promise.all(servers.map((server) => new Promise((resolve) => server.once("listening", resolve))));
  ports = servers.map((server) => (server.address() as AddressInfo).port);
});
afterAll(async () => {
  await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
});

function post(port: number, body: Buffer, headers: Record<string, string>): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const call = httpRequest({ host: "127.0.0.1", port, method: "POST", path: "/", headers }, (response) => {
      const chunks: Buffer[] = [];
      response.on("data", (chunk: Buffer) => chunks.push(chunk));
      response.on("end", () => resolve({ status: response.statusCode ?? 0, text: Buffer.concat(chunks).toString() }));
    });
    call.on("error", reject);
    call.end(body);
  });
}

const json = { "content-type": "application/json" };
const cases: { name: string; body: Buffer; headers?: Record<string, string> }[] = [
  { name: "an object", body: Buffer.from('{"payload":"{}","n":1}') },
  { name: "a scalar", body: Buffer.from("42") },
  { name: "null", body: Buffer.from("null") },
  { name: "a byte order mark", body: Buffer.from('\ufeff{"a":1}') },
  { name: "only a byte order mark", body: Buffer.from("\ufeff") },
  { name: "blanks", body: Buffer.from("  \n ") },
  { name: "broken JSON", body: Buffer.from('{"a":') },
  { name: "bytes that are not UTF-8", body: Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d]) },
  { name: "multi-byte text", body: Buffer.from('{"a":"zoë ✓ 😀"}') },
  { name: "the largest body", body: Buffer.from(`"${"x".repeat(MAX_BODY_BYTES - 2)}"`) },
  { name: "a body over the limit", body: Buffer.from(`"${"x".repeat(MAX_BODY_BYTES - 1)}"`) },
  { name: "a charset", body: Buffer.from('{"a":1}'), headers: { "content-type": "application/json; charset=utf-8" } },
  { name: "an identity encoding", body: Buffer.from('{"a":1}'), headers: { ...json, "content-encoding": "Identity" } },
];

describe("jsonBody", () => {
  for (const { name, body, headers = json } of cases) {
    it(`answers ${name} as body-parser does`, async () => {
      const sent = { ...headers, "content-length": String(body.length) };
      const [ours, theirs] = await Promise.all(ports.map((port) => post(port, body, sent)));
      expect(ours).toEqual(theirs);
    });
  }

  // Where the two differ on purpose: body-parser here takes any type (`type: () => true`).
  it("refuses a body without Content-Type (415), which body-parser would parse", async () => {
    const body = Buffer.from('{"a":1}');
    const answer = await post(ports[0] as number, body, { "content-length": String(body.length) });
    expect(answer).toEqual({ status: 415, text: '{"message":"Content-Type must be application/json"}' });
  });
});
