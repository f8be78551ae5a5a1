/** One option of the admin CLI, as `--name VALUE`. */
export interface Flag {
  /** The placeholder of its value in usage lines. */
  value: string;
  /** What to pass, for help and usage errors; a command may word it for itself. */
  description: string;
  /**
   * The input field of the core operation the flag fills. Core's messages name fields (as the
   * admin HTTP API does); the CLI names the flag instead.
   */
  field: string;
}

export const FLAGS = {
  email: { value: "EMAIL", field: "email", description: "an email address" },
  name: { value: "NAME", field: "name", description: "the organization's name, 1 to 200 characters" },
  org: {
    value: "ORG_ID",
    field: "orgId",
    description: "the organization's id, org_…, from org:create or org:list",
  },
  key: {
    value: "KEY_ID",
    field: "keyId",
    description: "the key's id, key_…, from org:create or key:list (not the API key pk_… itself)",
  },
  "signing-secret": {
    value: "SECRET",
    field: "signingSecret",
    description:
      "whsec_ followed by padded base64 of at least 24 bytes, or any text of 24 to 256 characters; generated when left out",
  },
} as const satisfies Record<string, Flag>;

export type FlagName = keyof typeof FLAGS;

export const JSON_FLAG_DESCRIPTION = "print exactly one JSON object on stdout instead of readable lines";
