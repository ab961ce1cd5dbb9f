// The console's only way to the server: the public tRPC API through the real @trpc/client with
// httpBatchLink (calls made in the same tick share one HTTP request). The API is a Python server with
// no TypeScript router to infer from, so the procedures the console uses are typed by hand below.
import { createTRPCUntypedClient, httpBatchLink, TRPCClientError } from "@trpc/client";
import type { AnyRouter } from "@trpc/server";
import { conflictIssues, worded } from "./messages";

export type Status = "draft" | "live" | "paused" | "archived";
export type Channel = "inApp" | "notify" | "email";

export interface Action {
  label: string;
  style: "primary" | "secondary" | "positive" | "dismiss";
  action: { type: "internalLink"; path: string } | { type: "externalLink"; url: string } | { type: "dismiss" };
}
export interface Media {
  type: "image" | "gif" | "youtube";
  url: string;
  aspect?: string;
  alt?: string;
}
export interface Message {
  title: string;
  body?: string;
  presentation?: "modal" | "banner" | "toast";
  dismissible?: boolean;
  frequency?: "once" | "session" | "always" | { everyDays: number };
  priority?: number;
  media?: Media;
  emoji?: string;
  actions?: Action[];
  enabled?: boolean;
}
export interface NotificationCopy {
  title: string;
  body: string;
}
export interface EmailCopy {
  subject: string;
  title: string;
  body: string;
  ctaLabel: string;
  heroImageUrl?: string;
}
export interface Definition {
  name: string;
  description?: string;
  channels: Channel[];
  message?: Message;
  notification?: NotificationCopy;
  email?: EmailCopy;
  startsAt?: string;
  endsAt?: string;
  excludeMinors: boolean;
  discoverable: boolean;
}
export interface Campaign extends Definition {
  id: string;
  status: Status;
  tenantId: string | null;
  createdAt: string;
  updatedAt: string;
  revision: number;
}
export interface Stats {
  audience: number;
  enrolled: number;
  shown: number;
  clicked: number;
  dismissed: number;
  notified: number;
  emailed: number;
  bounced: number;
  complained: number;
}
export type Source =
  | { type: "dids"; dids: string[] }
  | { type: "profileIds"; profileIds: string[] }
  | { type: "tag"; slug: string }
  | { type: "connections"; profileId: string }
  | { type: "all" };
export interface AudienceCount {
  count: number;
  added: number;
  notFound: string[];
}
export interface AudiencePage {
  records: { profileId: string; did: string | null }[];
  cursor: string | null;
  hasMore: boolean;
}
export interface DispatchPreview {
  audienceCount: number;
  alreadyNotifiedCount: number;
  recipientCount: number;
  notificationRecipientCount: number;
  emailRecipientCount: number;
  previewToken: string;
  blockedReason?: string | null;
}
export type DispatchStatus = "scheduled" | "sending" | "completed" | "stopped" | "failed" | "missed" | "cancelled" | "needs_review";
/** DispatchPublic. The index signature admits counters the server adds later (the progress screen
 *  renders any numeric field it does not know, so a new counter needs no console change). */
export interface Dispatch {
  [field: string]: unknown;
  dispatchId: string;
  campaignId: string;
  channel: string;
  status: DispatchStatus;
  pages: number;
  enqueued: number;
  acknowledged: number;
  rejected: number;
  suppressed: number;
  emailed: number;
  throttled: number;
  uncertain: number;
  startedAt?: string | null;
  finishedAt?: string | null;
  nextPageAt?: string | null;
  lastError?: string | null;
}
export interface RuleVerdict {
  rule: string;
  ok: boolean;
  detail?: string | null;
}
export interface ChannelExplanation {
  channel: "notify" | "email";
  wouldReceive: boolean;
  blockedBy?: string | null;
  rules: RuleVerdict[];
}
/** campaigns.explainRecipient: per channel, would this profile receive it now, and every rule's verdict. */
export interface RecipientExplanation {
  campaignId: string;
  profileId: string;
  member: boolean;
  memberSource?: string | null;
  memberAddedAt?: string | null;
  channels: ChannelExplanation[];
  past?: Record<string, string | null> | null;
}
type Ref = { campaignId: string };
/** profiles.get, the parts an explanation words the age policy with. */
export interface ProfileFacts {
  profileId: string;
  dob: string | null;
  isManaged: boolean;
  isServiceProfile: boolean;
}

export type Role = "viewer" | "author" | "publisher" | "admin";
export const ROLES: readonly Role[] = ["viewer", "author", "publisher", "admin"];
/** access.me: who the credential is, the tenant it acts in and the highest role held there. */
export interface Me {
  profileId: string;
  tenantId: string;
  role: Role | null;
  platform: boolean;
}
export interface Grant {
  tenantId: string;
  subject: string;
  role: Role;
  grantedAt: string;
  grantedBy?: string | null;
}
/** apiKeys.list: never the key itself, only its first characters. */
export interface ApiKey {
  id: string;
  tenantId: string;
  name: string;
  role: Role;
  prefix: string;
  createdAt: string;
  createdBy: string;
  expiresAt?: string | null;
  revokedAt?: string | null;
  lastUsedAt?: string | null;
}
/** campaigns.listAwaitingApproval: a send the tenant's approval policy held back. */
export interface AwaitingApproval {
  campaignId: string;
  name: string;
  previewToken: string;
  recipients: number;
  requestedBy: string | null;
  requestedAt: string | null;
  changedSince: boolean;
}
export interface Approved {
  campaignId: string;
  previewToken: string;
  approvedBy: string;
  approvedAt: string;
  recipients: number;
}
export interface ChannelCap {
  max: number;
  windowSeconds: number;
}
export type CapChannel = "notify" | "email";
/** tenants.get: a tenant's record (README "Tenants"). */
export interface Tenant {
  tenantId: string;
  name: string;
  logoUrl: string | null;
  primaryColor: string | null;
  textColor: string | null;
  appOrigin: string | null;
  emailFrom: string | null;
  frequencyCaps: Partial<Record<CapChannel, ChannelCap>>;
  approval: { minRecipients: number } | null;
  createdAt: string;
  updatedAt: string;
}
/** What tenants.create and tenants.update take: null clears an optional field. A cap is sent as typed
 *  (a half-filled one too), for the server to say which part is missing. */
export interface TenantInput {
  name: string;
  logoUrl: string | null;
  primaryColor: string | null;
  textColor: string | null;
  appOrigin: string | null;
  emailFrom: string | null;
  frequencyCaps: Partial<Record<CapChannel, Partial<ChannelCap>>>;
  approval: { minRecipients: number } | null;
}
type TenantRef = { tenantId: string };
type GrantInput = TenantRef & { subject: string; role: Role };

/** Every procedure the console calls: its kind, input and output. */
interface Procedures {
  "campaigns.list": ["query", { status?: Status; cursor?: string; limit?: number }, { records: Campaign[]; cursor: string | null; hasMore: boolean }];
  "campaigns.get": ["query", Ref, Campaign];
  "campaigns.create": ["mutation", Definition & { id: string }, Campaign];
  "campaigns.update": ["mutation", Record<string, unknown> & Ref & { expectedUpdatedAt: string }, Campaign];
  "campaigns.setStatus": ["mutation", Ref & { status: Status }, Campaign];
  "campaigns.getStats": ["query", Ref, Stats];
  "campaigns.previewEmail": ["query", Ref, { subject: string; html: string; text: string }];
  "campaigns.previewAudience": ["mutation", Ref & { source: Source }, AudienceCount];
  "campaigns.addAudience": ["mutation", Ref & { source: Source }, AudienceCount];
  "campaigns.removeAudience": ["mutation", Ref & { source: Source }, { removed: number }];
  "campaigns.getAudience": ["query", Ref & { cursor?: string; limit?: number }, AudiencePage];
  "campaigns.sendTestToMe": ["mutation", Ref, { testId: string; channels: Channel[] }];
  "campaigns.previewDispatch": ["query", Ref, DispatchPreview];
  "campaigns.dispatch": ["mutation", Ref & { expectedPreviewToken: string }, { dispatchId: string; channels: string[] }];
  "campaigns.listDispatches": ["query", Ref, Dispatch[]];
  "campaigns.explainRecipient": ["query", Ref & { profileId: string }, RecipientExplanation];
  "profiles.get": ["query", { profileId: string }, ProfileFacts];
  "campaigns.listAwaitingApproval": ["query", undefined, { records: AwaitingApproval[] }];
  "campaigns.approveDispatch": ["mutation", Ref & { previewToken: string }, Approved];
  "access.me": ["query", undefined, Me];
  "access.list": ["query", TenantRef, { records: Grant[] }];
  "access.grant": ["mutation", GrantInput, Grant];
  "access.revoke": ["mutation", GrantInput, { ok: boolean }];
  "apiKeys.list": ["query", TenantRef, { records: ApiKey[] }];
  "apiKeys.create": ["mutation", TenantRef & { name: string; role: Role; expiresAt?: string }, { id: string; key: string }];
  "apiKeys.revoke": ["mutation", { id: string }, ApiKey];
  "tenants.get": ["query", TenantRef, Tenant];
  "tenants.list": ["query", { cursor?: string; limit?: number }, { records: Tenant[]; cursor: string | null; hasMore: boolean }];
  "tenants.create": ["mutation", TenantRef & { name: string } & Partial<Omit<TenantInput, "name">>, Tenant];
  "tenants.update": ["mutation", TenantRef & Partial<TenantInput>, Tenant];
}
export type Path = keyof Procedures;

/** A field error: pydantic's `loc` as `path`, its error type as `code`; `detail` keeps the API's own
 *  message once `message` is in the admin's words (messages.ts). */
export interface Issue {
  path: (string | number)[];
  message: string;
  code?: string;
  detail?: string;
}

/** What a failed call tells the screen: the tRPC code, the message, field issues in the admin's words
 *  and the procedure that failed (a FORBIDDEN names the role that procedure needs). */
export class ApiError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly issues: Issue[],
    readonly procedure: string = "",
  ) {
    super(message);
  }
}

function toApiError(err: unknown, procedure: string): ApiError {
  if (err instanceof TRPCClientError) {
    const data: unknown = err.data;
    const record = typeof data === "object" && data !== null ? (data as Record<string, unknown>) : {};
    const code = typeof record["code"] === "string" ? record["code"] : "NETWORK_ERROR";
    const raw = Array.isArray(record["issues"]) ? (record["issues"] as Issue[]) : [];
    const issues = code === "CONFLICT" && !raw.length ? conflictIssues(procedure, err.message) : raw.map(worded);
    return new ApiError(code, err.message, issues, procedure);
  }
  return new ApiError("NETWORK_ERROR", err instanceof Error ? err.message : String(err), [], procedure);
}

/** How the console keeps a session alive: a token known to have expired is renewed before a call is
 *  sent, and a call refused UNAUTHORIZED is sent again once renewed (renew resolves false: signed out). */
export interface Renewing {
  expired(): boolean;
  renew(ended?: boolean): Promise<boolean>;
}

export class Api {
  private readonly client;
  renewing: Renewing | null = null;

  constructor(root: string, token: () => string | null) {
    this.client = createTRPCUntypedClient<AnyRouter>({
      links: [
        httpBatchLink({
          url: `${root}/trpc`,
          maxURLLength: 4000, // a long list of getStats calls splits instead of failing
          headers: () => {
            const value = token();
            return value ? { authorization: `Bearer ${value}` } : {};
          },
        }),
      ],
    });
  }

  /** One procedure call; `direct` skips renewal (the renewal's own check of a new token). Nothing is
   *  awaited before the request unless the token has expired, so same-tick calls still share a batch. */
  async call<P extends Path>(path: P, input: Procedures[P][1], direct = false): Promise<Procedures[P][2]> {
    const kind: "query" | "mutation" = PROCEDURE_KINDS[path];
    const keeper = direct ? null : this.renewing;
    for (;;) {
      if (keeper?.expired() && !(await keeper.renew())) throw new ApiError("UNAUTHORIZED", "Signed out", [], path);
      try {
        const result = kind === "query" ? await this.client.query(path, input) : await this.client.mutation(path, input);
        return result as Procedures[P][2];
      } catch (err) {
        const failure = toApiError(err, path);
        if (failure.code === "UNAUTHORIZED" && keeper && (await keeper.renew(true))) continue;
        throw failure;
      }
    }
  }
}

const PROCEDURE_KINDS: { [P in Path]: Procedures[P][0] } = {
  "campaigns.list": "query",
  "campaigns.get": "query",
  "campaigns.create": "mutation",
  "campaigns.update": "mutation",
  "campaigns.setStatus": "mutation",
  "campaigns.getStats": "query",
  "campaigns.previewEmail": "query",
  "campaigns.previewAudience": "mutation",
  "campaigns.addAudience": "mutation",
  "campaigns.removeAudience": "mutation",
  "campaigns.getAudience": "query",
  "campaigns.sendTestToMe": "mutation",
  "campaigns.previewDispatch": "query",
  "campaigns.dispatch": "mutation",
  "campaigns.listDispatches": "query",
  "campaigns.explainRecipient": "query",
  "profiles.get": "query",
  "campaigns.listAwaitingApproval": "query",
  "campaigns.approveDispatch": "mutation",
  "access.me": "query",
  "access.list": "query",
  "access.grant": "mutation",
  "access.revoke": "mutation",
  "apiKeys.list": "query",
  "apiKeys.create": "mutation",
  "apiKeys.revoke": "mutation",
  "tenants.get": "query",
  "tenants.list": "query",
  "tenants.create": "mutation",
  "tenants.update": "mutation",
};
