"""The settings every reviewed send is judged by, as one value built once per process.

Preview, approval, confirmation, scheduling and the scheduler's firing each recompute the same preview,
so each must see the same age policy, recipient cap, deliverable channels and untranslated share: a
setting one of them missed would let the preview offer a send that another refuses. The composition
roots (``create_app``'s ``Services``, ``run_sweep``) build this value from ``Settings`` and pass it
down whole.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from campaign_engine.campaigns.sending.plan import Pace
from campaign_engine.campaigns.sending.send_blocks import ALL_CHANNELS
from campaign_engine.config import Settings
from campaign_engine.domain.dispatch import DeliveryChannel

__all__ = ["DEFAULT_EXPERIMENT_MIN_PER_VARIANT", "DEFAULT_UNTRANSLATED_MAX_SHARE", "DispatchSettings"]

# Past this share of a translated campaign's recipients getting the base content though they read
# another language, a send needs acceptFallback (CAMPAIGN_UNTRANSLATED_MAX_SHARE).
DEFAULT_UNTRANSLATED_MAX_SHARE = 0.05
# The fewest test recipients a test wave may give any variant (CAMPAIGN_EXPERIMENT_MIN_PER_VARIANT).
DEFAULT_EXPERIMENT_MIN_PER_VARIANT = 50


@dataclass(frozen=True)
class DispatchSettings:
    adult_age: int  # the age policy's (CAMPAIGN_ADULT_AGE)
    max_recipients: int  # a preview refuses an audience past this (CAMPAIGN_PREVIEW_MAX_RECIPIENTS)
    deliverable: frozenset[DeliveryChannel] = ALL_CHANNELS  # a campaign with another channel is blocked
    untranslated_max_share: float = DEFAULT_UNTRANSLATED_MAX_SHARE
    experiment_min_per_variant: int = DEFAULT_EXPERIMENT_MIN_PER_VARIANT
    pace: Pace = field(default_factory=Pace)  # what the review's forecast times (plan.py)

    @classmethod
    def from_settings(cls, settings: Settings) -> DispatchSettings:
        return cls(
            adult_age=settings.campaign_adult_age,
            max_recipients=settings.campaign_preview_max_recipients,
            deliverable=settings.dispatch_channels,
            untranslated_max_share=settings.campaign_untranslated_max_share,
            experiment_min_per_variant=settings.campaign_experiment_min_per_variant,
            pace=Pace(
                page_size=settings.campaign_dispatch_page_size,
                email_page_size=settings.campaign_email_page_size,
                wave_delay=settings.campaign_dispatch_delay_seconds,
                min_delay=settings.campaign_deadline_min_delay_seconds,
                caps=settings.campaign_frequency_caps,
            ),
        )
