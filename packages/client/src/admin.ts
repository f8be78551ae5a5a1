import { type CallOptions, type ConnectionOptions, createHttp, type PunctualHttp, toQuery, unwrap } from "./http.ts";
import type {
  Account,
  AddMemberRequest,
  ApiKey,
  CreateAccountRequest,
  CreatedApiKey,
  CreatedOrganization,
  CreateOrganizationRequest,
  EndedSigningSecretOverlap,
  Member,
  Membership,
  Organization,
  RawQuery,
  RevokedApiKey,
  RotatedApiKey,
  RotatedSigningSecret,
  RotateSigningSecretRequest,
  ServiceHealth,
} from "./types.ts";

export interface PunctualAdminClientOptions extends ConnectionOptions {
  /** The deployment's `ADMIN_TOKEN`, sent as `Authorization: Bearer …`. */
  adminToken: string;
}

/**
 * A client of the admin API (`/api/admin/…`), authenticated with the operator's `ADMIN_TOKEN`: the
 * same operations as `pnpm admin`. A deployment without an admin token has no admin API (every call
 * throws a PunctualError with status 404). Kept apart from the organization's client so that code
 * holding an API key never holds the admin token by accident.
 */
export function createPunctualAdminClient(options: PunctualAdminClientOptions) {
  const http: PunctualHttp = createHttp(options, { authorization: `Bearer ${options.adminToken}` });

  const accounts = {
    /** `POST /api/admin/accounts`: an account (an email) that can own or join organizations. */
    create(body: CreateAccountRequest, { signal }: CallOptions = {}): Promise<Account> {
      return unwrap("adminCreateAccount", http.POST("/api/admin/accounts", { body, signal }));
    },
  };

  const organizations = {
    /** `POST /api/admin/organizations`: an organization, its first API key and its signing secret. */
    create(body: CreateOrganizationRequest, { signal }: CallOptions = {}): Promise<CreatedOrganization> {
      return unwrap("adminCreateOrganization", http.POST("/api/admin/organizations", { body, signal }));
    },

    /** `GET /api/admin/organizations`: every organization, or those an account (`email`) belongs to. */
    list(query: RawQuery<"adminListOrganizations"> = {}, { signal }: CallOptions = {}): Promise<Organization[]> {
      return unwrap(
        "adminListOrganizations",
        http.GET("/api/admin/organizations", { params: { query: toQuery(query) }, signal }),
      );
    },

    /** `GET /api/admin/organizations/{orgId}/members`: the organization's accounts, the owner first. */
    listMembers(orgId: string, { signal }: CallOptions = {}): Promise<Membership[]> {
      return unwrap(
        "adminListMembers",
        http.GET("/api/admin/organizations/{orgId}/members", { params: { path: { orgId } }, signal }),
      );
    },

    /** `POST /api/admin/organizations/{orgId}/members`: adds an account to the organization. */
    addMember(orgId: string, body: AddMemberRequest, { signal }: CallOptions = {}): Promise<Member> {
      return unwrap(
        "adminAddMember",
        http.POST("/api/admin/organizations/{orgId}/members", { params: { path: { orgId } }, body, signal }),
      );
    },
  };

  const apiKeys = {
    /** `POST /api/admin/organizations/{orgId}/keys`: a new API key (shown once) beside the others. */
    create(orgId: string, { signal }: CallOptions = {}): Promise<CreatedApiKey> {
      return unwrap(
        "adminCreateApiKey",
        http.POST("/api/admin/organizations/{orgId}/keys", { params: { path: { orgId } }, signal }),
      );
    },

    /** `GET /api/admin/organizations/{orgId}/keys`: the organization's keys (prefixes, never the keys). */
    list(orgId: string, { signal }: CallOptions = {}): Promise<ApiKey[]> {
      return unwrap(
        "adminListApiKeys",
        http.GET("/api/admin/organizations/{orgId}/keys", { params: { path: { orgId } }, signal }),
      );
    },

    /** `POST /api/admin/keys/{keyId}/revoke`: the key stops working at once. */
    revoke(keyId: string, { signal }: CallOptions = {}): Promise<RevokedApiKey> {
      return unwrap(
        "adminRevokeApiKey",
        http.POST("/api/admin/keys/{keyId}/revoke", { params: { path: { keyId } }, signal }),
      );
    },

    /** `POST /api/admin/keys/{keyId}/rotate`: a new key replaces this one, which stops working at once. */
    rotate(keyId: string, { signal }: CallOptions = {}): Promise<RotatedApiKey> {
      return unwrap(
        "adminRotateApiKey",
        http.POST("/api/admin/keys/{keyId}/rotate", { params: { path: { keyId } }, signal }),
      );
    },
  };

  const signingSecrets = {
    /**
     * `POST /api/admin/organizations/{orgId}/signing-secret/rotate`: a new signing secret (generated
     * unless given); the replaced one keeps signing beside it until `previousSecretValidUntil`.
     */
    rotate(
      orgId: string,
      body: RotateSigningSecretRequest = {},
      { signal }: CallOptions = {},
    ): Promise<RotatedSigningSecret> {
      return unwrap(
        "adminRotateSigningSecret",
        http.POST("/api/admin/organizations/{orgId}/signing-secret/rotate", {
          params: { path: { orgId } },
          body,
          signal,
        }),
      );
    },

    /** `POST /api/admin/organizations/{orgId}/signing-secret/end-overlap`: the replaced secret stops signing now. */
    async endOverlap(orgId: string, { signal }: CallOptions = {}): Promise<EndedSigningSecretOverlap> {
      const ended = await unwrap(
        "adminEndSigningSecretOverlap",
        http.POST("/api/admin/organizations/{orgId}/signing-secret/end-overlap", {
          params: { path: { orgId } },
          signal,
        }),
      );
      // openapi-fetch's typing of answers drops a property whose only type is null (its Readable<>
      // helper), here previousSecretValidUntil; the server sends it, as the generated type says.
      return ended as EndedSigningSecretOverlap;
    },
  };

  /** `GET /api/admin/service-health`: the queues, the workers and the reconciler, as the console shows them. */
  function serviceHealth({ signal }: CallOptions = {}): Promise<ServiceHealth> {
    return unwrap("adminGetServiceHealth", http.GET("/api/admin/service-health", { signal }));
  }

  return { accounts, organizations, apiKeys, signingSecrets, serviceHealth, http };
}

export type PunctualAdminClient = ReturnType<typeof createPunctualAdminClient>;
