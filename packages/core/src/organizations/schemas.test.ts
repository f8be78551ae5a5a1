import { describe, expect, it } from "vitest";
import { AppError } from "../errors.ts";
import { newId } from "../ids.ts";
import { parseInput } from "../validation.ts";
import {
  CreateAccountInputSchema,
  CreateOrganizationInputSchema,
  KeyRefInputSchema,
  MAX_MARKS_PER_CHARACTER,
  OrgRefInputSchema,
  SigningSecretSchema,
} from "./schemas.ts";

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

describe("organization names and emails", () => {
  const organization = (name: string, email = "owner@example.com") =>
    refused(() => parseInput(CreateOrganizationInputSchema, { email, name }));
  const stored = (name: string) => parseInput(CreateOrganizationInputSchema, { email: "owner@example.com", name }).name;
  const invisible = (field: string) =>
    `400 '${field}' must not contain invisible characters such as zero-width spaces, joiners or byte order marks`;

  it("refuse format and other invisible characters wherever they are, so two names cannot look the same", () => {
    for (const name of [
      "\ufeffAcme",
      "Acme\ufeff",
      "Ac\u200bme",
      "Ac\u200cme",
      "Ac\u200dme",
      "Acme\u200e",
      "\u061cAcme",
      "Ac\u00adme",
      "Ac\u2060me",
      "Acme\u3164",
      "Acme\ufe0f",
      "Ac\u034fme",
      "Acme\u{e0041}",
    ]) {
      expect(organization(name), JSON.stringify(name)).toBe(invisible("name"));
    }
    // Control characters keep their own sentence.
    expect(organization("Acme\u202e\u200b")).toBe(
      "400 'name' must not contain control characters, line breaks or bidirectional overrides",
    );
  });

  it("refuse an email with an invisible character, even where trimming would have cut it off", () => {
    for (const email of ["\ufeffowner@example.com", "owner\u200b@example.com", "owner@example.com\u2060"]) {
      expect(organization("Acme", email), JSON.stringify(email)).toBe(invisible("email"));
      expect(refused(() => parseInput(CreateAccountInputSchema, { email }))).toBe(invisible("email"));
    }
  });

  it("store names in one spelling: composed (NFC)", () => {
    expect(stored("Cafe\u0301")).toBe("Caf\u00e9");
    expect(stored("Vie\u0323\u0302t Nam")).toBe("Vi\u1ec7t Nam");
    expect(stored("Caf\u00e9")).toBe("Caf\u00e9");
    expect(stored("  Ångström  ".normalize("NFD"))).toBe("Ångström".normalize("NFC"));
  });

  it(`accept up to ${MAX_MARKS_PER_CHARACTER} combining marks on one character, as written languages need`, () => {
    for (const name of [
      "Vi\u1ec7t Nam",
      "Vie\u0323\u0302t Nam",
      // Hebrew with a dagesh, a vowel point and a cantillation mark on one letter.
      "\u05d1\u05bc\u05b8\u0591\u05e8\u05d0",
      // A Tibetan stack: two subjoined letters and a vowel sign.
      "\u0f66\u0f92\u0fb2\u0f74\u0f56",
      `a${"\u0300\u0301\u0302\u0303"}`,
    ]) {
      expect(organization(name), JSON.stringify(name)).toBe("accepted");
    }
  });

  it("refuse a flood of combining marks on one character, counted with the marks of composed letters", () => {
    const message = `400 'name' must not stack more than ${MAX_MARKS_PER_CHARACTER} combining marks on one character`;
    expect(organization(`Acme${"\u0300\u0301\u0302\u0303\u0304"}`)).toBe(message);
    expect(organization(`A${"\u0300\u0301\u0302\u0303\u0304\u0305\u0306\u0307\u0308\u0309".repeat(19)}`)).toBe(message);
    // "ệ" is one character carrying two marks once taken apart.
    expect(organization(`Vi\u1ec7${"\u0300\u0301\u0303"}t`)).toBe(message);
    // Enclosing marks count too.
    expect(organization(`A${"\u20dd\u20de\u20df\u20e0\u20e2"}`)).toBe(message);
  });

  it("refuse the same combining mark twice on one character", () => {
    expect(organization("Cafe\u0301\u0301")).toBe("400 'name' must not repeat a combining mark on one character");
    expect(organization("Caf\u00e9\u0301")).toBe("400 'name' must not repeat a combining mark on one character");
    expect(organization("Cafe\u0301e\u0301")).toBe("accepted");
  });
});
