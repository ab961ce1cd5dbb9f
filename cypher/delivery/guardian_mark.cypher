// Routing to guardians: a guardian reached on $channel ('notify' | 'email') as the
// guardian of excluded members, marked on their CAMPAIGN_STATE (notifyRouted / emailRouted) in the
// transaction that recorded the delivery, under the profile locks it took; getStats.guardians counts
// them. Unique seeks; a guardian's state was written by that same transaction.
UNWIND $marks AS mark
MATCH (p:Profile {profileId: mark.profileId})-[s:CAMPAIGN_STATE]->(c:Campaign {id: mark.campaignId})
FOREACH (_ IN CASE WHEN $channel = 'notify' THEN [1] ELSE [] END | SET s.notifyRouted = true)
FOREACH (_ IN CASE WHEN $channel = 'email' THEN [1] ELSE [] END | SET s.emailRouted = true)
