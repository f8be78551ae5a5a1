import { describe, expect, it } from "vitest";
import { AppError } from "../errors.ts";
import { newId } from "../ids.ts";
import { parseInput } from "../validation.ts";
import { KeyRefInputSchema, OrgRefInputSchema, SigningSecretSchema } from "./schemas.ts";

const refused = (run: () => unknown) => {
  try {
    run();
  } catch (error) {
    return error instanceof AppError ? `${error.status} ${error.message}` : `not an AppError: ${error}`;
  }
  return "accepted";
};

describe("id formats of the admin operations", () => {
  it("accept every id newId makes", () => {
    for (let n = 0; n < 100; n++) {
      expect(refused(() => parseInput(KeyRefInputSchema, { keyId: newId("key") }))).toBe("accepted");
      expect(refused(() => parseInput(OrgRefInputSchema, { orgId: newId("org") }))).toBe("accepted");
    }
  });

  it("accept an id of the right kind that names nothing, so the lookup reports it as not found", () => {
    for (const keyId of ["key_doesnotexist", "key_0", "key_01m842w0p5r8yrmq0ekzqf", `key_${"z".repeat(64)}`]) {
      expect(refused(() => parseInput(KeyRefInputSchema, { keyId }))).toBe("accepted");
    }
    for (const orgId of ["org_doesnotexist", `org_${"0".repeat(64)}`]) {
      expect(refused(() => parseInput(OrgRefInputSchema, { orgId }))).toBe("accepted");
    }
  });

  it("refuse another kind of identifier, an empty or over-long id and other characters with 400", () => {
    const keyMessage = "400 'keyId' must be an API key id (key_…)";
    for (const keyId of [
      "bogus",
      "pk_4JfPFFDSnxJTOv18eGw1cAePLFAYJ1NKjFxcUxJ6E3w",
      "org_01m842w0nev0hjbnbys4cy6es8",
      "key_",
      "KEY_01M842W0P5R8YRMQ0EKZQFFS16",
      "key_01m842w0p5r8yrmq0ekzqffs16 ",
      "key_01-02",
      `key_${"z".repeat(65)}`,
    ]) {
      expect(
        refused(() => parseInput(KeyRefInputSchema, { keyId })),
        keyId,
      ).toBe(keyMessage);
    }
    const orgMessage = "400 'orgId' must be an organization id (org_…)";
    for (const orgId of ["acme", "key_01m842w0p5r8yrmq0ekzqffs16", "org_", "org_a/b"]) {
      expect(
        refused(() => parseInput(OrgRefInputSchema, { orgId })),
        orgId,
      ).toBe(orgMessage);
    }
  });
});

describe("custom signing secrets", () => {
  const message =
    "400 'signingSecret' must be 'whsec_' followed by padded base64 of at least 24 bytes, or any text of at least 24 characters";
  const check = (secret: string) => refused(() => parseInput(SigningSecretSchema, secret));

  it("accept whsec_ with padded base64 of 24 bytes or more, and any other text of 24 characters or more", () => {
    expect(check(`whsec_${Buffer.alloc(24, 7).toString("base64")}`)).toBe("accepted");
    expect(check(`whsec_${Buffer.alloc(25, 7).toString("base64")}`)).toBe("accepted");
    expect(check("a custom secret of some length")).toBe("accepted");
  });

  it("refuse whsec_ with unpadded base64, which Standard Webhooks libraries cannot decode", () => {
    const padded = Buffer.alloc(25, 7).toString("base64");
    expect(padded.endsWith("=")).toBe(true);
    expect(check(`whsec_${padded.replace(/=+$/, "")}`)).toBe(message);
  });

  it("refuse whsec_ with fewer than 24 bytes, and short custom secrets", () => {
    expect(check(`whsec_${Buffer.alloc(23, 7).toString("base64")}`)).toBe(message);
    expect(check("too short")).toBe(message);
  });
});
