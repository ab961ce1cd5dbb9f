"""The one value every reviewed send is judged by is built from ``Settings`` whole: no setting is lost."""

from __future__ import annotations

from campaign_engine.campaigns.sending.dispatch_settings import (
    DEFAULT_UNTRANSLATED_MAX_SHARE,
    DispatchSettings,
)
from campaign_engine.campaigns.sending.plan import Pace
from campaign_engine.config import Settings


def test_every_dispatch_setting_comes_from_its_environment_setting() -> None:
    settings = Settings(
        _env_file=None,
        campaign_adult_age=21,
        campaign_preview_max_recipients=250,
        campaign_untranslated_max_share=0.3,
        campaign_email_provider="none",
        campaign_dispatch_page_size=200,
        campaign_email_page_size=20,
        campaign_dispatch_delay_seconds=5,
    )
    assert DispatchSettings.from_settings(settings) == DispatchSettings(
        adult_age=21, max_recipients=250, deliverable=frozenset({"notify"}), untranslated_max_share=0.3,
        pace=Pace(page_size=200, email_page_size=20, wave_delay=5),
    )  # fmt: skip


def test_the_untranslated_share_defaults_alike_in_code_and_configuration() -> None:
    assert Settings.model_fields["campaign_untranslated_max_share"].default == DEFAULT_UNTRANSLATED_MAX_SHARE
