"""The console's one table of error wording (``admin/src/messages.ts``) against what the API really says.

Bad campaign definitions and tenant settings are validated by the API's own models; their issues
(``validation_issues``, exactly what ``data.issues`` carries) go through the table as the console runs
it (bundled by esbuild, run by Node). Every issue must come out as a sentence naming its field, never
the validator's own words, on the field the console shows it beside. Every reason code the API answers
(``domain/reasons.py``, enumerated from its Literal types) has a sentence in ``REASONS``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from campaign_engine.campaigns.audience.segments import SegmentInput
from campaign_engine.domain.campaign import CampaignCreate
from campaign_engine.domain.errors import validation_issues
from campaign_engine.domain.reasons import REASON_CODES
from campaign_engine.domain.tenant import TenantPatch

ADMIN = Path(__file__).resolve().parents[2] / "admin"
EMAIL = {"subject": "Spring", "title": "Spring", "body": "News", "ctaLabel": "Read"}
NOTIFICATION = {"title": "Spring", "body": "News"}


def _issues(model: type[BaseModel], data: dict[str, Any]) -> list[dict[str, Any]]:
    with pytest.raises(ValidationError) as info:
        model.model_validate(data)
    return validation_issues(info.value)


def _run(script: str, data: Any, tmp_path: Path) -> Any:
    """``script`` run by Node with the bundled table as ``m`` and ``data`` as JSON on stdin."""
    node, esbuild = shutil.which("node"), ADMIN / "node_modules" / ".bin" / "esbuild"
    assert node is not None and esbuild.exists(), "run `make admin-assets` (npm ci) first"
    bundle = tmp_path / "messages.cjs"
    subprocess.run(
        [str(esbuild), str(ADMIN / "src" / "messages.ts"), "--bundle", "--format=cjs", "--platform=node",
         f"--outfile={bundle}", "--log-level=warning"],
        check=True,
    )  # fmt: skip
    prelude = (
        f"const m = require({json.dumps(str(bundle))});"
        "const data = JSON.parse(require('fs').readFileSync(0, 'utf8'));"
    )
    done = subprocess.run(
        [node, "-e", prelude + script], input=json.dumps(data), capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout)


def _worded(issues: list[dict[str, Any]], tmp_path: Path) -> list[dict[str, Any]]:
    return _run("process.stdout.write(JSON.stringify(data.map(m.worded)));", issues, tmp_path)  # type: ignore[no-any-return]


def test_every_campaign_field_error_is_a_sentence_naming_the_field(tmp_path: Path) -> None:
    bad: list[dict[str, Any]] = [
        {"id": "Spring Launch!", "name": " ", "channels": ["email"],
         "email": {**EMAIL, "ctaLabel": "", "heroImageUrl": "http://cdn.example/spring.png"}},
        {"id": "spring", "name": "Spring", "channels": ["inApp"], "message": {
            "title": "", "media": {"type": "image", "url": "http://x.example/a.png", "aspect": "wide"},
            "actions": [{"label": "", "action": {"type": "externalLink", "url": "http://a.example"}},
                        {"label": "Go", "action": {"type": "internalLink", "path": "news"}}]}},
        {"id": "spring", "name": "Spring", "channels": ["notify"],
         "notification": {"title": "x" * 70, "body": ""}},
        {"id": "spring", "name": "Spring", "channels": []},
        {"id": "spring", "name": "Spring", "channels": ["notify"], "notification": NOTIFICATION,
         "startsAt": "2027-01-02T00:00:00Z", "endsAt": "2027-01-01T00:00:00Z"},
        {"id": "spring", "name": "Spring", "channels": ["notify", "email"], "notification": NOTIFICATION},
    ]  # fmt: skip
    issues = [issue for data in bad for issue in _issues(CampaignCreate, data)]
    worded = _worded(issues, tmp_path)
    by_path = {".".join(map(str, w["path"])): w["message"] for w in worded}
    assert by_path["email.ctaLabel"] == "The button label is required."
    assert by_path["email.heroImageUrl"] == "Use an https:// address for the hero image URL."
    assert by_path["message.actions.0.label"] == "The label of action 1 is required."
    assert (
        by_path["message.actions.0.action.externalLink.url"]
        == "Use an https:// address for the link of action 1."
    )
    assert by_path["message.actions.1.action.internalLink.path"].startswith(
        "The link of action 2 must be an app path"
    )
    assert by_path["message.media.aspect"] == "Write the aspect ratio as width:height, like 16:9."
    assert by_path["notification.title"] == "The notification title can have at most 65 characters."
    assert by_path["notification.body"] == "The notification body is required."
    assert by_path["name"] == "The name is required."
    assert by_path["id"].startswith("The campaign id may use only lower-case letters")
    on_channels = {w["message"] for w in worded if w["path"] == ["channels"]}
    assert on_channels == {
        "Choose at least one channel.",
        "The Email channel is on but has nothing to send: write its content or turn the channel off.",
    }
    assert by_path["endsAt"] == "The end must be after the start."
    for issue, said in zip(issues, worded, strict=True):
        assert said["message"] != issue["message"], f"no row words {issue}"
        assert "should" not in said["message"] and "Value error" not in said["message"], said
        assert said["detail"] == issue["message"]  # the API's own words, kept for the hover text


def test_every_tenant_setting_error_is_a_sentence_naming_the_field(tmp_path: Path) -> None:
    bad = {"tenantId": "alpha", "primaryColor": "teal", "appOrigin": "http://evil.example", "logoUrl": "http://x",
           "emailFrom": "not an address", "approval": {"minRecipients": 0},
           "frequencyCaps": {"notify": {"max": 3}}}  # fmt: skip
    issues = _issues(TenantPatch, bad)
    worded = _worded(issues, tmp_path)
    by_path = {".".join(map(str, w["path"])): w["message"] for w in worded}
    assert by_path["primaryColor"] == "The primary colour must be a hex colour such as #0b7285 or #222."
    assert by_path["appOrigin"].startswith("The app origin must be exactly https://host[:port]")
    assert by_path["logoUrl"] == "Use an https:// address for the logo URL."
    assert by_path["emailFrom"].startswith("The sender must be an address like")
    assert by_path["approval.minRecipients"] == "The approval threshold must be at least 1."
    assert by_path["frequencyCaps.notify.windowSeconds"] == "The notification cap window is required."
    for issue, said in zip(issues, worded, strict=True):
        assert said["message"] != issue["message"], f"no row words {issue}"


def test_every_segment_error_is_a_sentence_and_a_limit_keeps_its_name(tmp_path: Path) -> None:
    """The segment builder shows these where its count would be: a bad value names the field, a rule past
    a limit keeps the API's own naming of the limit."""
    bad: list[dict[str, Any]] = [
        {"segment": {"all": [{"tag": "Chess"}, {"locale": "fr_FR"}, {"ageAtLeast": 200}]}},
        {"segment": {"all": [{"memberOf": "Spring"}, {"timeZone": "Paris time"}, {"ageBelow": "ten"}]}},
        {"segment": {"all": [{"tag": f"t{i}"} for i in range(7)]}},
    ]
    issues = [issue for data in bad for issue in _issues(SegmentInput, data)]
    worded = _worded(issues, tmp_path)
    by_path = {".".join(map(str, w["path"])): w["message"] for w in worded}
    assert by_path["segment.all.0.tag"].startswith("A tag is lower-case letters")
    assert by_path["segment.all.1.locale"].startswith("A language tag is")
    assert by_path["segment.all.2.ageAtLeast"] == "The age can be at most 130."
    assert by_path["segment.all.0.memberOf"].startswith("A campaign id is")
    assert by_path["segment.all.1.timeZone"] == "Write a time zone like Europe/Paris."
    assert by_path["segment"] == (
        "The rule: a segment has at most 6 conditions (found 7); limit 'conditions' is 6."
    )
    for issue, said in zip(issues, worded, strict=True):
        assert said["message"] != issue["message"], f"no row words {issue}"
        assert "should" not in said["message"] and "Value error" not in said["message"], said


def test_every_reason_code_the_api_answers_has_words_in_the_console(tmp_path: Path) -> None:
    """Enumerated from the code (``domain/reasons.py``'s Literals), never from a list written here: a
    code added there without a row in ``REASONS`` fails."""
    script = (
        "process.stdout.write(JSON.stringify(Object.fromEntries("
        "data.map((code) => [code, [code in m.REASONS, m.reasonSentence(code)]]))));"
    )
    said = _run(script, sorted(REASON_CODES), tmp_path)
    missing = sorted(code for code, (known, _) in said.items() if not known)
    assert not missing, f"no words in admin/src/messages.ts REASONS for: {missing}"
    assert {"tie", "insufficient_evidence", "too_few_per_variant", "missing_translation"} <= set(said)
    for code, (_, words) in said.items():
        assert words[0].isupper() and words.endswith(".") and len(words.split()) > 3, (code, words)
