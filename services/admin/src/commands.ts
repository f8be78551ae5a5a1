import {
  type AdminDeps,
  addMember,
  createAccount,
  createApiKey,
  createOrganization,
  endSigningSecretOverlap,
  listApiKeys,
  listOrganizations,
  revokeApiKey,
  rotateApiKey,
  rotateSigningSecret,
} from "@punctual/core";
import type { FlagName } from "./flags.ts";

/** The values of a command's options; a required one is always present when `run` is called. */
export type FlagValues = Partial<Record<FlagName, string>>;

export interface CommandFlag {
  name: FlagName;
  required: boolean;
  /** Replaces the flag's general description in this command's help. */
  description?: string;
}

export interface Command {
  summary: string;
  flags: CommandFlag[];
  /** `lines` are the readable output, one entry per line; each is escaped when printed. */
  run(deps: AdminDeps, values: FlagValues): Promise<{ json: object; lines: string[] }>;
}

const SHOWN_ONCE = "The API key is shown only now: store it safely.";

/** A required flag's value (the command line parser has checked it is there). */
const required = (values: FlagValues, name: FlagName) => values[name] as string;

const labelled = (pairs: [string, string][]) => {
  const width = Math.max(...pairs.map(([label]) => label.length)) + 1;
  return pairs.map(([label, value]) => `${`${label}:`.padEnd(width)} ${value}`);
};

export const COMMANDS: Record<string, Command> = {
  "account:create": {
    summary: "Create an account (a person, by email)",
    flags: [{ name: "email", required: true, description: "the person's email address" }],
    async run(deps, values) {
      const account = await createAccount(deps, { email: required(values, "email") });
      return { json: account, lines: [`Created account ${account.id} (${account.email})`] };
    },
  },
  "org:create": {
    summary: "Create an organization with its first API key and signing secret",
    flags: [
      { name: "email", required: true, description: "the owner's email address; the account is created when missing" },
      { name: "name", required: true },
      { name: "signing-secret", required: false },
    ],
    async run(deps, values) {
      const signingSecret = values["signing-secret"];
      const created = await createOrganization(deps, {
        email: required(values, "email"),
        name: required(values, "name"),
        ...(signingSecret === undefined ? {} : { signingSecret }),
      });
      return {
        json: created,
        lines: [
          ...labelled([
            ["Organization", created.orgId],
            ["Owner account", created.accountId],
            ["API key id", created.keyId],
            ["API key", created.apiKey],
            ["Signing secret", created.signingSecret],
          ]),
          SHOWN_ONCE,
        ],
      };
    },
  },
  "org:list": {
    summary: "List organizations (all, or those an email belongs to)",
    flags: [{ name: "email", required: false, description: "only the organizations this email belongs to" }],
    async run(deps, values) {
      const email = values.email;
      const organizations = await listOrganizations(deps, email === undefined ? {} : { email });
      const lines = organizations.map(
        (org) =>
          `${org.id}  ${org.name}  owner=${org.ownerEmail}  members=${org.members}  keys=${org.activeApiKeys}  created=${org.createdAt}` +
          (org.previousSecretValidUntil ? `  previous-secret-until=${org.previousSecretValidUntil}` : ""),
      );
      return { json: { organizations }, lines: lines.length ? lines : ["No organizations"] };
    },
  },
  "member:add": {
    summary: "Add an account (created when missing) to an organization",
    flags: [
      { name: "org", required: true },
      { name: "email", required: true, description: "the member's email address; the account is created when missing" },
    ],
    async run(deps, values) {
      const member = await addMember(deps, { orgId: required(values, "org"), email: required(values, "email") });
      return { json: member, lines: [`Added ${member.email} (${member.accountId}) to ${member.orgId}`] };
    },
  },
  "key:create": {
    summary: "Create another API key for an organization",
    flags: [{ name: "org", required: true }],
    async run(deps, values) {
      const key = await createApiKey(deps, { orgId: required(values, "org") });
      return {
        json: key,
        lines: [
          ...labelled([
            ["Organization", key.orgId],
            ["API key id", key.keyId],
            ["API key", key.apiKey],
          ]),
          SHOWN_ONCE,
        ],
      };
    },
  },
  "key:list": {
    summary: "List an organization's API keys: ids and prefixes, never the keys",
    flags: [{ name: "org", required: true }],
    async run(deps, values) {
      const keys = await listApiKeys(deps, { orgId: required(values, "org") });
      const lines = keys.map(
        (key) =>
          `${key.id}  ${key.prefix}…  created=${key.createdAt}  ${key.revokedAt ? `revoked=${key.revokedAt}` : "active"}  last-used=${key.lastUsedAt ?? "never"}`,
      );
      return { json: { keys }, lines: lines.length ? lines : ["No API keys"] };
    },
  },
  "key:revoke": {
    summary: "Revoke an API key; it stops working at once",
    flags: [{ name: "key", required: true }],
    async run(deps, values) {
      const revoked = await revokeApiKey(deps, { keyId: required(values, "key") });
      return { json: revoked, lines: [`Revoked ${revoked.keyId} at ${revoked.revokedAt}`] };
    },
  },
  "key:rotate": {
    summary: "Replace an API key by a new one; the old one stops working at once",
    flags: [{ name: "key", required: true }],
    async run(deps, values) {
      const rotated = await rotateApiKey(deps, { keyId: required(values, "key") });
      return {
        json: rotated,
        lines: [
          ...labelled([
            ["Revoked", rotated.revokedKeyId],
            ["API key id", rotated.keyId],
            ["API key", rotated.apiKey],
          ]),
          SHOWN_ONCE,
        ],
      };
    },
  },
  "secret:rotate": {
    summary: "Set a new signing secret (generated unless given); the replaced one also signs until the overlap ends",
    flags: [
      { name: "org", required: true },
      { name: "signing-secret", required: false },
    ],
    async run(deps, values) {
      const signingSecret = values["signing-secret"];
      const rotated = await rotateSigningSecret(deps, {
        orgId: required(values, "org"),
        ...(signingSecret === undefined ? {} : { signingSecret }),
      });
      const until = rotated.previousSecretValidUntil;
      return {
        json: rotated,
        lines: [
          `Signing secret of ${rotated.orgId}: ${rotated.signingSecret}`,
          until
            ? `The previous secret also signs deliveries until ${until}; secret:end-overlap --org ${rotated.orgId} stops that sooner.`
            : "Deliveries are signed with this secret only.",
        ],
      };
    },
  },
  "secret:end-overlap": {
    summary: "Stop signing deliveries with the secret the last rotation replaced, before its overlap ends",
    flags: [{ name: "org", required: true }],
    async run(deps, values) {
      const ended = await endSigningSecretOverlap(deps, { orgId: required(values, "org") });
      return { json: ended, lines: [`Deliveries of ${ended.orgId} are signed with the current secret only.`] };
    },
  },
};
