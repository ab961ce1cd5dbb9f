"""Provider feedback: bounces, spam complaints and provider suppressions turned into address suppressions.

``postmark.py`` and ``ses.py`` read the providers' records into ``events.Feedback`` (pure, no I/O),
``sns.py`` verifies the SNS envelope SES feedback arrives in, ``sns_http.py`` is its only network access
(signing certificates and subscription confirmation, through the egress policy), and ``store.py`` applies
feedback to the graph once per provider record. The suppression itself is read where email eligibility
is decided: ``graph/rules/policy.py`` (docs/architecture.md, "Feedback and suppression").
"""
