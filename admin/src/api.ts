// The console's only way to the server: the public tRPC API through the real @trpc/client with
// httpBatchLink (calls made in the same tick share one HTTP request). Every procedure's input and output
// is the generated `@campaign-engine/client` (clients/typescript, `make client`, from the Python
// routers' pydantic models): nothing here is typed by hand, so the console cannot drift from the API.
import { createTRPCUntypedClient, httpBatchLink, TRPCClientError } from "@trpc/client";
import type { AnyRouter } from "@trpc/server";
import type { ProcedureInput, ProcedureKind, ProcedureOutput, ProcedurePath } from "../../clients/typescript/src/paths";
import { conflictIssues, worded } from "./messages";

// The generated models, under the names the screens use.
export type {
  Action,
  AudienceCount,
  AudiencePage,
  AwaitingApproval,
  ChannelCap,
  ChannelExplanation,
  ContentVariant,
  DeliveryAttempt,
  DispatchPreview,
  Grant,
  Me,
  Media,
  Message,
  NotificationCopy,
  EmailCopy,
  EmailOverride,
  MessageOverride,
  NotificationOverride,
  PreviewInput,
  RecipientExplanation,
  RuleVerdict,
  Segment,
  SegmentExplanation,
  Suppression,
  VariantStats,
  EndpointPublic as WebhookEndpoint,
} from "../../clients/typescript/src/procedures";
import type {
  ApiKeyPublic,
  CampaignCreate,
  CampaignPublic,
  CampaignStats,
  DispatchPublic,
  ProfileOut,
  SourceInput,
  Me,
  TenantPatch,
  TenantPublic,
} from "../../clients/typescript/src/procedures";

export type Campaign = CampaignPublic;
export type Definition = Omit<CampaignCreate, "id">;
export type Status = CampaignPublic["status"];
export type Channel = CampaignPublic["channels"][number];
export type Stats = CampaignStats;
export type Source = SourceInput["source"];
export type Dispatch = DispatchPublic;
export type DispatchStatus = DispatchPublic["status"];
export type ProfileFacts = ProfileOut;
export type ApiKey = ApiKeyPublic;
export type Tenant = TenantPublic;
export type TenantInput = Omit<TenantPatch, "tenantId">;
export type Role = Me["role"] & string;
export const ROLES: readonly Role[] = ["viewer", "author", "publisher", "admin"];
/** The procedures the console calls (`PROCEDURE_KINDS` below). */
export type Path = keyof typeof PROCEDURE_KINDS;

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

  constructor(
    private readonly root: string,
    private readonly token: () => string | null,
    /** The tenant picked to act in (the API's x-campaign-tenant header); null: the credential's own. */
    private readonly tenant: () => string | null = () => null,
  ) {
    this.client = createTRPCUntypedClient<AnyRouter>({
      links: [
        httpBatchLink({
          url: `${root}/trpc`,
          maxURLLength: 4000, // a long list of getStats calls splits instead of failing
          headers: () => this.credentials(),
        }),
      ],
    });
  }

  private credentials(): Record<string, string> {
    const value = this.token();
    const picked = this.tenant();
    return { ...(value ? { authorization: `Bearer ${value}` } : {}), ...(picked ? { "x-campaign-tenant": picked } : {}) };
  }

  /** A plain HTTP route of the API (the CSV import, the exports) with the same credential and renewal
   *  as a call; an error answer is read into an ApiError like a call's. */
  async http(request: Transfer): Promise<Response> {
    const keeper = this.renewing;
    for (;;) {
      if (keeper?.expired() && !(await keeper.renew())) throw new ApiError("UNAUTHORIZED", "Signed out", [], request.procedure);
      const headers = this.credentials();
      if (request.contentType) headers["content-type"] = request.contentType;
      let answer: Response;
      try {
        answer = await fetch(`${this.root}${request.url}`, { method: request.method ?? "GET", headers, body: request.body ?? null, credentials: "omit" });
      } catch (err) {
        throw new ApiError("NETWORK_ERROR", err instanceof Error ? err.message : String(err), [], request.procedure);
      }
      if (answer.ok) return answer;
      const failure = await envelopeError(answer, request.procedure);
      if (failure.code === "UNAUTHORIZED" && keeper && (await keeper.renew(true))) continue;
      throw failure;
    }
  }

  /** One procedure call; `direct` skips renewal (the renewal's own check of a new token). Nothing is
   *  awaited before the request unless the token has expired, so same-tick calls still share a batch. */
  async call<P extends Path>(path: P, input: ProcedureInput<P>, direct = false): Promise<ProcedureOutput<P>> {
    const kind: "query" | "mutation" = PROCEDURE_KINDS[path];
    const keeper = direct ? null : this.renewing;
    for (;;) {
      if (keeper?.expired() && !(await keeper.renew())) throw new ApiError("UNAUTHORIZED", "Signed out", [], path);
      try {
        const result = kind === "query" ? await this.client.query(path, input) : await this.client.mutation(path, input);
        return result as ProcedureOutput<P>;
      } catch (err) {
        const failure = toApiError(err, path);
        if (failure.code === "UNAUTHORIZED" && keeper && (await keeper.renew(true))) continue;
        throw failure;
      }
    }
  }
}

/** Each procedure's kind, as the generated declarations state it (a wrong one fails tsc). Listed for the
 *  untyped client, which needs the kind at run time; only the procedures the console calls. */
/** An error answer of a plain HTTP route: the same tRPC envelope a call's error is. */
async function envelopeError(answer: Response, procedure: string): Promise<ApiError> {
  const body: unknown = await answer.json().catch(() => null);
  const error = typeof body === "object" && body !== null ? (body as { error?: { message?: unknown; data?: { code?: unknown; issues?: unknown } } }).error : undefined;
  const code = typeof error?.data?.code === "string" ? error.data.code : answer.status === 401 ? "UNAUTHORIZED" : "INTERNAL_SERVER_ERROR";
  const message = typeof error?.message === "string" ? error.message : `${answer.status} ${answer.statusText}`;
  const issues = Array.isArray(error?.data?.issues) ? (error.data.issues as Issue[]).map(worded) : [];
  return new ApiError(code, message, issues, procedure);
}

export interface Transfer {
  /** What the route is called in errors and in the access table (`imports.profiles`, `exports.recipients`). */
  procedure: string;
  /** The path below the API root, with its query string. */
  url: string;
  method?: "GET" | "POST";
  body?: Blob;
  contentType?: string;
}


const PROCEDURE_KINDS = {
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
  "campaigns.resumeDispatch": "mutation",
  "campaigns.chooseVariant": "mutation",
  "campaigns.explainRecipient": "query",
  "campaigns.previewSegment": "mutation",
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
  "tenants.updateLayout": "mutation",
  "tenants.previewLayout": "query",
  "campaigns.duplicate": "mutation",
  "webhookEndpoints.list": "query",
  "webhookEndpoints.create": "mutation",
  "webhookEndpoints.update": "mutation",
  "webhookEndpoints.delete": "mutation",
  "webhookEndpoints.rotateSecret": "mutation",
  "webhookEndpoints.deliveries": "query",
  "webhookEndpoints.replay": "mutation",
  "campaigns.scheduleDispatch": "mutation",
  "campaigns.cancelScheduledDispatch": "mutation",
  "campaigns.listUncertainEmails": "query",
  "campaigns.delete": "mutation",
  "suppressions.list": "query",
  "suppressions.get": "query",
  "suppressions.remove": "mutation",
} as const satisfies { [P in ProcedurePath]?: ProcedureKind<P> };
