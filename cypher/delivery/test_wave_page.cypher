// The ids of one audience page while a test wave is undecided (delivery/test_wave_page.py):
// the same audience page placeholder the email claim reads (audience_member seek, a live segment's arms beside it),
// ids only, no policy. The test-wave draw is a keyed hash in Python (domain/ab_variants.py:in_test_wave),
// so the claim then takes the page's chosen ids (its test members) instead of reading the page again;
// the cursor moves over every id read here. One record per page.
CYPHER replan=skip
{{AUDIENCE_PAGE}}
RETURN collect(p.profileId) AS ids
