// Drives the campaign-engine API the way the LearnCard app does: the published
// @learncard/network-brain-client (getClient: challenges first, then one DID-auth JWT per request, every
// query POSTed, every input JSON-stringified) with a DID-auth function from LearnCard's own wallet stack
// (@learncard/core + the native DIDKit plugin for Node + did:key from a seed + the VC plugin's
// getDidAuthVp). A did:web person is the same wallet with LearnCard's did:web plugin.
//
// Usage: node run.mjs <api base url>; env LC_SEED, LC_WEB_SEED, LC_WEB_DID, LC_CAMPAIGN, LC_OPEN.
// Prints one JSON object: what each call answered, and the raw refusals.
import { generateLearnCard } from '@learncard/core';
import { getDidKitPlugin } from '@learncard/didkit-plugin-node';
import { getDidKeyPlugin } from '@learncard/didkey-plugin';
import { getVCPlugin } from '@learncard/vc-plugin';
import { getDidWebPlugin } from '@learncard/did-web-plugin';
import { getClient } from '@learncard/network-brain-client';

const [base] = process.argv.slice(2);
const url = `${base}/trpc`;
const env = process.env;

const wallet = async (seed, didWeb) => {
    let lc = await generateLearnCard();
    lc = await lc.addPlugin(await getDidKitPlugin());
    lc = await lc.addPlugin(await getDidKeyPlugin(lc, seed, 'key'));
    lc = await lc.addPlugin(getVCPlugin(lc));
    if (didWeb) lc = await lc.addPlugin(await getDidWebPlugin(lc, didWeb));
    return lc;
};

// What the LearnCard app passes to getClient: a nonce-less token for getChallenges, then one per call.
const didAuth = lc => async challenge =>
    lc.invoke.getDidAuthVp({ proofFormat: 'jwt', ...(challenge ? { challenge } : {}) });

const settle = async promise => {
    try {
        return { ok: true, data: await promise };
    } catch (error) {
        return { ok: false, code: error?.data?.code ?? String(error), status: error?.data?.httpStatus };
    }
};

// One raw call as the client's httpBatchLink sends it (POST, batch=1, stringified input).
const raw = async (path, token, input) => {
    const body = input === undefined ? {} : { 0: JSON.stringify(input) };
    const answer = await fetch(`${url}/${path}?batch=1`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
        body: JSON.stringify(body),
    });
    return { status: answer.status, body: await answer.json() };
};

const out = {};
const keyWallet = await wallet(env.LC_SEED);
out.did = keyWallet.id.did();
const client = await getClient(url, didAuth(keyWallet));

out.mine = await settle(client.campaigns.getMyCampaigns.query());
out.shown = await settle(client.campaigns.recordEvent.mutate({ campaignId: env.LC_CAMPAIGN, event: 'shown' }));
out.discover = await settle(client.campaigns.discover.query());
out.enroll = await settle(client.campaigns.enroll.mutate({ campaignId: env.LC_OPEN }));
out.preferences = await settle(client.preferences.getAnnouncementPreferences.query());
out.optOut = await settle(
    client.preferences.updateAnnouncementPreferences.mutate({ announcementEmailOptOut: true })
);
out.mineAfter = await settle(client.campaigns.getMyCampaigns.query());

// The refusals, with tokens this wallet signed: a nonce-less token on getMyCampaigns, a replayed one.
const bare = await didAuth(keyWallet)();
out.bare = await raw('campaigns.getMyCampaigns', bare);
const challenges = await raw('utilities.getChallenges', bare, { amount: 2 });
const nonce = challenges.body[0].result.data[0];
const once = await didAuth(keyWallet)(nonce);
out.first = await raw('campaigns.getMyCampaigns', once);
out.replay = await raw('campaigns.getMyCampaigns', once);

// A did:web person: the document is served on loopback by the test.
const webWallet = await wallet(env.LC_WEB_SEED, env.LC_WEB_DID);
out.webDid = webWallet.id.did();
const webClient = await getClient(url, didAuth(webWallet));
out.webMine = await settle(webClient.campaigns.getMyCampaigns.query());
out.webShown = await settle(
    webClient.campaigns.recordEvent.mutate({ campaignId: env.LC_CAMPAIGN, event: 'shown' })
);

process.stdout.write(JSON.stringify(out));
process.exit(0);
