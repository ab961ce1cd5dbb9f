// The type test, for v11 and v10 alike: every procedure called with a well-typed input compiles, and a
// wrong input does not (each `@ts-expect-error` must meet an error, or tsc fails). "client-under-test" is
// test/client.ts (v11) or test/v10/client.ts (v10), by tsconfig paths. tests/e2e/test_typescript_client.py
// runs both.
import { api } from "client-under-test";
import type { CampaignPublic, MyCampaigns, ProcedureInput, ProcedureOutput } from "client-under-test";

export async function calls(): Promise<void> {
  const mine: ProcedureOutput<"campaigns.getMyCampaigns"> = await api.campaigns.getMyCampaigns.query();
  // The README's example, as written there.
  const readme: MyCampaigns = await api.campaigns.getMyCampaigns.query();
  await api.campaigns.recordEvent.mutate({ campaignId: readme.campaigns[0].campaignId, event: "shown" });
  const campaign: CampaignPublic = await api.campaigns.get.query({ campaignId: "spring-2027" });
  const created = await api.campaigns.create.mutate({
    id: "spring-2027",
    name: "Spring",
    channels: ["inApp"],
    message: { title: "Spring is here" },
  });
  const name: string = created.name;
  const input: ProcedureInput<"profiles.upsert"> = { profiles: [{ profileId: "p1", tags: ["beta"] }] };
  await api.profiles.upsert.mutate(input);
  await api.audit.list.query(); // an input that may be left out
  void [mine, campaign, name];

  // @ts-expect-error campaignId is required
  await api.campaigns.get.query({});
  // @ts-expect-error campaignId is a string
  await api.campaigns.get.query({ campaignId: 7 });
  // @ts-expect-error no such procedure
  await api.campaigns.nope.query();
  // @ts-expect-error a query is not a mutation
  await api.campaigns.get.mutate({ campaignId: "x" });
  // @ts-expect-error channels are inApp, notify or email
  await api.campaigns.create.mutate({ id: "x", name: "X", channels: ["sms"] });
  // @ts-expect-error the answer has no such field
  void (await api.campaigns.get.query({ campaignId: "x" })).nope;
}
