import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  anyJson,
  anyText,
  bodyText,
  extraHeaders,
  fieldValue,
  type HostileApi,
  type HostileRequest,
  headerText,
  hostileId,
  sendAndCheck,
  startHostileApi,
} from "./hostile-support.ts";

// Contract §1 under hostile input, for the admin HTTP API (contract §2) with the admin token: never
// a 5xx, errors exactly `{"message": "…"}`, nothing written by a refused request.

/** This file's own token: placeholder-looking tokens are refused at start. */
const ADMIN_TOKEN = "adm_Wk4rT9bQz2Lp7Xv5Nc8Hd3Js";

const RUNS = Number(process.env.PROPERTY_RUNS ?? 150);
const TIMEOUT = 120_000;

let api: HostileApi;
let keyId: string;

beforeAll(async () => {
  api = await startHostileApi({ ADMIN_TOKEN });
  keyId = (await api.context.db.apiKey.findFirstOrThrow({ where: { orgId: api.org.orgId } })).id;
});
afterAll(() => api.close());

/** Mostly the right token, so requests reach the handlers; sometimes a wrong or missing one. */
const adminAuthorization = fc.oneof(
  { weight: 10, arbitrary: fc.constant({ authorization: `Bearer ${ADMIN_TOKEN}` }) },
  { weight: 1, arbitrary: fc.constant({}) },
  { weight: 1, arbitrary: headerText.map((value) => ({ authorization: value })) },
  { weight: 1, arbitrary: headerText.map((value) => ({ authorization: `Bearer ${value}` })) },
);

/** Admin bodies: fields of the admin operations with near-valid or hostile values. */
const adminBody = () =>
  fc.oneof(
    {
      weight: 3,
      arbitrary: fc
        .record(
          {
            email: fc.oneof(
              fc.constantFrom("owner@example.com", "A@B.CO", "not-an-email", "a@b", " x@y.z "),
              fieldValue,
            ),
            name: fc.oneof(fc.constantFrom("Acme", "", " ", "x".repeat(201)), fieldValue),
            signingSecret: fc.oneof(
              fc.constantFrom(
                `whsec_${Buffer.alloc(32, 7).toString("base64")}`,
                "whsec_short",
                "a-custom-secret-of-enough-length",
                "x".repeat(257),
              ),
              fieldValue,
            ),
            orgId: fc.oneof(fc.constant(api.org.orgId), anyText),
            keyId: fc.oneof(fc.constant(keyId), anyText),
            extra: anyJson,
          },
          { requiredKeys: [] },
        )
        .map((body) => JSON.stringify(body)),
    },
    { weight: 2, arbitrary: bodyText },
    { weight: 1, arbitrary: fc.constant(undefined) },
  );

/** The admin routes with hostile ids (built once the records exist). */
const routes = (): fc.Arbitrary<{ method: HostileRequest["method"]; path: string }> =>
  fc.oneof(
    fc.constant({ method: "post" as const, path: "/api/admin/accounts" }),
    fc.constant({ method: "post" as const, path: "/api/admin/organizations" }),
    fc
      .oneof(
        fc.constant(""),
        fc.string({ maxLength: 20 }).map((email) => `?email=${encodeURIComponent(email)}`),
      )
      .map((query) => ({ method: "get" as const, path: `/api/admin/organizations${query}` })),
    fc
      .tuple(
        fc.constantFrom<HostileRequest["method"]>("post", "get"),
        hostileId([api.org.orgId, api.other.orgId]),
        fc.constantFrom("members", "keys", "signing-secret/rotate"),
      )
      .map(([method, id, tail]) => ({ method, path: `/api/admin/organizations/${id}/${tail}` })),
    fc
      .tuple(hostileId([keyId]), fc.constantFrom("revoke", "rotate"))
      .map(([id, action]) => ({ method: "post" as const, path: `/api/admin/keys/${id}/${action}` })),
    fc
      .tuple(fc.constantFrom<HostileRequest["method"]>("get", "put", "delete", "patch"), fc.string({ maxLength: 20 }))
      .map(([method, tail]) => ({ method, path: `/api/admin/${encodeURIComponent(tail)}` })),
  );

describe("admin API under hostile input", () => {
  it(
    "every admin route",
    () =>
      fc.assert(
        fc.asyncProperty(routes(), adminAuthorization, extraHeaders, adminBody(), async (route, auth, extra, body) => {
          await sendAndCheck(api, { ...route, headers: { ...extra, ...auth }, body });
        }),
        { numRuns: RUNS * 2 },
      ),
    TIMEOUT,
  );

  it(
    "names and emails with control characters, line separators or bidi overrides are refused",
    () =>
      fc.assert(
        fc.asyncProperty(
          fc.constantFrom("name", "email"),
          fc.string({ maxLength: 10 }),
          fc.oneof(
            fc.integer({ min: 0x00, max: 0x1f }),
            fc.integer({ min: 0x7f, max: 0x9f }),
            fc.constantFrom(0x2028, 0x2029, 0x202a, 0x202b, 0x202c, 0x202d, 0x202e, 0x2066, 0x2067, 0x2068, 0x2069),
          ),
          async (field, around, code) => {
            const hostile = `${around}${String.fromCharCode(code)}${around}`;
            const body = { email: "owner@example.com", name: "Acme", [field]: `${hostile}x@example.com` };
            const outcome = await sendAndCheck(api, {
              method: "post",
              path: "/api/admin/organizations",
              headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
              body: JSON.stringify(body),
            });
            expect(outcome.status).toBe(400);
            expect(outcome.json).toEqual({
              message: `'${field}' must not contain control characters, line breaks or bidirectional overrides`,
            });
          },
        ),
        { numRuns: RUNS },
      ),
    TIMEOUT,
  );

  it(
    "revoking or rotating keys that do not exist changes nothing",
    () =>
      fc.assert(
        fc.asyncProperty(
          fc.stringMatching(/^key_[0-9a-z]{26}$/),
          fc.constantFrom("revoke", "rotate"),
          async (id, action) => {
            const outcome = await sendAndCheck(api, {
              method: "post",
              path: `/api/admin/keys/${id}/${action}`,
              headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
            });
            expect(outcome.status).toBe(404);
          },
        ),
        { numRuns: RUNS },
      ),
    TIMEOUT,
  );
});
