import { createServer, type Server } from "node:http";
import { connect } from "node:net";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createTestApiDeps, createTestContext, type TestContext } from "../../../test/support/context.ts";
import { createApp } from "../src/app.ts";
import { answerClientErrors } from "../src/middleware/client-errors.ts";

let context: TestContext;
let server: Server;
let port: number;

beforeAll(async () => {
  context = await createTestContext();
  server = createServer(createApp(createTestApiDeps(context).deps));
  answerClientErrors(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  port = (server.address() as { port: number }).port;
});

afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
  await context.close();
});

/** Sends raw bytes and returns the whole answer as text. */
function raw(request: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1", () => socket.write(request));
    let answer = "";
    socket.on("data", (chunk) => {
      answer += chunk.toString();
    });
    socket.on("end", () => resolve(answer));
    socket.on("error", reject);
  });
}

it("answers headers over 16 KiB with 431 and a JSON message", async () => {
  const answer = await raw(`GET /api/events HTTP/1.1\r\nHost: x\r\nX-Big: ${"a".repeat(20_000)}\r\n\r\n`);
  expect(answer).toMatch(/^HTTP\/1\.1 431 /);
  expect(answer).toMatch(/Content-Type: application\/json/);
  expect(answer.split("\r\n\r\n")[1]).toBe('{"message":"Request headers are too large"}');
});

it("answers a malformed request line with 400 and a JSON message", async () => {
  const answer = await raw("THIS IS NOT HTTP\r\n\r\n");
  expect(answer).toMatch(/^HTTP\/1\.1 400 /);
  expect(answer.split("\r\n\r\n")[1]).toBe('{"message":"Malformed request"}');
});
