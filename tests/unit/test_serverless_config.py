"""serverless.yml regression: the workers' complete VPC egress path, the SQS queue wiring, the settings each
function gets, and the package it runs.

A Lambda in a private subnet reaches webhook receivers only through the whole chain
PrivateSubnetA -> PrivateRouteTable -> PrivateRoute (0.0.0.0/0) -> NatGateway in PublicSubnetA with an
Elastic IP -> PublicRouteTable -> PublicRoute -> InternetGateway attached to the VPC. One missing link
and every webhook times out in production, so each link is asserted.

Settings are checked the way each edge checks them at start (``Settings.require_*``) on the deployed
environment with SSM parameters given plausible values: a variable missing from a function fails here,
not at its first cold start. tests/e2e/test_lambda_emulation.py runs the same file for real.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any, get_origin

import pytest

from campaign_engine.config import Settings
from tests.support.lambda_emulator import (
    function_environment,
    load_serverless,
    resolve_value,
    ssm_parameter_names,
)

ROOT = Path(__file__).resolve().parents[2]
STAGE = "prod"
PLAUSIBLE_SSM = {
    "neo4j-uri": "neo4j+s://graph.example.com:7687",
    "neo4j-user": "neo4j",
    "neo4j-password": "a-real-neo4j-password",
    "auth-jwt-secret": "0123456789abcdef0123456789abcdef-jwt",
    "admin-profile-ids": "admin-1,admin-2",
    "notifications-webhook-url": "https://inbox.example.com/api/notifications/send",
    "notifications-webhook-secret": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
    "secrets-key": "ZmVybmV0LWtleS1vZi0zMi1ieXRlcy0wMTIzNDU2Nzg=",  # Fernet: base64 of 32 bytes
    "unsubscribe-secret": "0123456789abcdef0123456789abcdef-unsub",
    "domain-name": "campaigns.example.com",
    "postmark-api-key": "00000000-0000-0000-0000-000000000000",
    "postmark-broadcast-stream": "broadcast",
    "email-from": "announcements@example.com",
    "app-origins": '{"default": "https://app.example.com"}',
    "postmark-webhook-username": "postmark-feedback",
    "postmark-webhook-password": "a-long-random-webhook-password",
}
EMAIL_FUNCTIONS = ("api", "pageWorker")


@pytest.fixture(scope="module")
def config() -> dict[str, Any]:
    return load_serverless(ROOT / "serverless.yml")


def _settings(config: dict[str, Any], function: str) -> Settings:
    """The Settings a cold start of ``function`` builds from its deployed environment."""
    ssm = {f"/campaign-engine/{STAGE}/{name}": value for name, value in PLAUSIBLE_SSM.items()}
    refs = {
        "DispatchQueue": "https://sqs.example/dispatch",
        "DeliveryQueue": "https://sqs.example/delivery",
        "WebhookQueue": "https://sqs.example/webhooks",
        **{
            f"{lane}{kind}Queue": f"https://sqs.example/{lane}-{kind}".lower()
            for lane in ("Critical", "Bulk")
            for kind in ("Dispatch", "Delivery")
        },
    }
    env = {
        name: resolve_value(value, stage=STAGE, ssm=ssm, refs=refs, arns={})
        for name, value in function_environment(config, function).items()
    }
    # model_validate: these values only, nothing from this process's environment or a dotenv file; a
    # mapping field reads its JSON as the environment source would.
    mappings = {n for n, f in Settings.model_fields.items() if get_origin(f.annotation) is dict}
    return Settings.model_validate(
        {n.lower(): json.loads(v) if n.lower() in mappings else v for n, v in env.items()}
    )


def _res(config: dict[str, Any], name: str, kind: str) -> dict[str, Any]:
    resource = config["resources"]["Resources"][name]
    assert resource["Type"] == kind, name
    return dict(resource.get("Properties", {}))


def test_worker_egress_path_is_complete(config: dict[str, Any]) -> None:
    vpc = config["provider"]["vpc"]
    assert vpc["subnetIds"] == [{"Ref": "PrivateSubnetA"}]
    assert vpc["securityGroupIds"] == [{"Ref": "ServerlessSecurityGroup"}]

    private_assoc = [
        r["Properties"]
        for r in config["resources"]["Resources"].values()
        if r["Type"] == "AWS::EC2::SubnetRouteTableAssociation"
    ]
    assert {
        "SubnetId": {"Ref": "PrivateSubnetA"},
        "RouteTableId": {"Ref": "PrivateRouteTable"},
    } in private_assoc
    assert {
        "SubnetId": {"Ref": "PublicSubnetA"},
        "RouteTableId": {"Ref": "PublicRouteTable"},
    } in private_assoc

    private_route = _res(config, "PrivateRoute", "AWS::EC2::Route")
    assert private_route["RouteTableId"] == {"Ref": "PrivateRouteTable"}
    assert private_route["DestinationCidrBlock"] == "0.0.0.0/0"
    assert private_route["NatGatewayId"] == {"Ref": "NatGateway"}

    nat = _res(config, "NatGateway", "AWS::EC2::NatGateway")
    assert nat["SubnetId"] == {"Ref": "PublicSubnetA"}
    eip_name = nat["AllocationId"]["Fn::GetAtt"][0]
    assert _res(config, eip_name, "AWS::EC2::EIP")["Domain"] == "vpc"

    public_route = _res(config, "PublicRoute", "AWS::EC2::Route")
    assert public_route["RouteTableId"] == {"Ref": "PublicRouteTable"}
    assert public_route["DestinationCidrBlock"] == "0.0.0.0/0"
    assert public_route["GatewayId"] == {"Ref": "InternetGateway"}
    _res(config, "InternetGateway", "AWS::EC2::InternetGateway")

    attachment = _res(config, "VPCGatewayAttachment", "AWS::EC2::VPCGatewayAttachment")
    assert attachment == {"VpcId": {"Ref": "VPC"}, "InternetGatewayId": {"Ref": "InternetGateway"}}
    for name in ("PrivateSubnetA", "PublicSubnetA", "PrivateRouteTable", "PublicRouteTable"):
        assert _res(config, name, config["resources"]["Resources"][name]["Type"])["VpcId"] == {"Ref": "VPC"}

    group = _res(config, "ServerlessSecurityGroup", "AWS::EC2::SecurityGroup")
    assert "SecurityGroupEgress" not in group  # default egress (all outbound) is what webhooks need


@pytest.mark.parametrize(
    ("function", "queue", "dlq", "handler"),
    [
        ("pageWorker", "DispatchQueue", "DispatchDeadLetterQueue", "campaign_engine.aws.page_handler"),
        (
            "deliveryWorker",
            "DeliveryQueue",
            "DeliveryDeadLetterQueue",
            "campaign_engine.aws.delivery_handler",
        ),
        ("webhookRelay", "WebhookQueue", "WebhookDeadLetterQueue", "campaign_engine.aws.webhook_handler"),
    ],
)
def test_queue_wiring(config: dict[str, Any], function: str, queue: str, dlq: str, handler: str) -> None:
    spec = config["functions"][function]
    assert spec["handler"] == handler
    event, *_lanes = spec["events"]  # the main queue, then the lanes' own (test_lanes_have_queues_...)
    assert event["sqs"]["arn"] == {"Fn::GetAtt": [queue, "Arn"]}
    assert event["sqs"]["functionResponseType"] == "ReportBatchItemFailures"
    properties = _res(config, queue, "AWS::SQS::Queue")
    assert properties["RedrivePolicy"]["deadLetterTargetArn"] == {"Fn::GetAtt": [dlq, "Arn"]}
    assert properties["RedrivePolicy"]["maxReceiveCount"] >= 1
    _res(config, dlq, "AWS::SQS::Queue")
    assert properties["VisibilityTimeout"] >= spec["timeout"]  # a batch never reappears mid-run
    assert properties["VisibilityTimeout"] == 6 * spec["timeout"]  # AWS's advice for SQS event sources
    env = config["provider"]["environment"]
    assert env["CAMPAIGN_DISPATCH_QUEUE_URL"] == {"Ref": "DispatchQueue"}
    assert env["CAMPAIGN_DELIVERY_QUEUE_URL"] == {"Ref": "DeliveryQueue"}
    assert env["CAMPAIGN_WEBHOOK_QUEUE_URL"] == {"Ref": "WebhookQueue"}
    assert env["CAMPAIGN_QUEUE_BACKEND"] == "sqs"
    assert env["CAMPAIGN_ALLOW_PRIVATE_WEBHOOKS"] == "false"


def test_api_and_sweeper_functions(config: dict[str, Any]) -> None:
    functions = config["functions"]
    assert functions["api"]["handler"] == "campaign_engine.aws.api_handler"
    assert functions["sweeper"]["handler"] == "campaign_engine.aws.sweep_handler"
    assert functions["sweeper"]["events"] == [{"schedule": "rate(1 minute)"}]
    import campaign_engine.aws as aws

    for spec in functions.values():
        assert callable(getattr(aws, spec["handler"].rsplit(".", 1)[1]))


def test_every_ssm_parameter_has_a_plausible_value_here(config: dict[str, Any]) -> None:
    assert ssm_parameter_names(config, stage=STAGE) == {
        f"/campaign-engine/{STAGE}/{n}" for n in PLAUSIBLE_SSM
    }


def test_each_function_starts_with_its_deployed_settings(config: dict[str, Any]) -> None:
    api = _settings(config, "api")
    api.require_api()
    api.require_webhooks()  # the admin's notify self-test
    api.require_email()  # the admin's email self-test and the unsubscribe pages
    _settings(config, "deliveryWorker").require_webhooks()
    for function in ("api", "deliveryWorker"):  # the API seals receivers' secrets, the worker opens them
        assert _settings(config, function).secret_box() is not None
    page = _settings(config, "pageWorker")
    page.require_webhooks()
    page.require_email()
    for function in ("api", "pageWorker", "deliveryWorker", "sweeper"):
        settings = _settings(config, function)
        assert settings.campaign_queue_backend == "sqs"
        assert settings.campaign_dispatch_queue_url == "https://sqs.example/dispatch"
        assert settings.campaign_delivery_queue_url == "https://sqs.example/delivery"
        assert settings.domain_name == "campaigns.example.com"


def test_email_is_configured_where_it_is_sent_and_nowhere_else(config: dict[str, Any]) -> None:
    """Email pages travel on the DispatchQueue, so the page worker (and the API, for test sends and the
    unsubscribe pages) carries the Postmark settings; the other functions never see its secrets."""
    ssm = "${ssm:/campaign-engine/${sls:stage}/%s}"
    for function in EMAIL_FUNCTIONS:
        env = function_environment(config, function)
        assert env["CAMPAIGN_EMAIL_PROVIDER"] == "postmark"
        assert env["POSTMARK_API_KEY"] == ssm % "postmark-api-key"
        assert env["POSTMARK_BROADCAST_STREAM"] == ssm % "postmark-broadcast-stream"
        assert env["EMAIL_FROM"] == ssm % "email-from"
        assert env["CAMPAIGN_APP_ORIGINS"] == ssm % "app-origins"
        assert env["CAMPAIGN_UNSUBSCRIBE_SECRET"] == ssm % "unsubscribe-secret"
        assert env["DOMAIN_NAME"] == ssm % "domain-name"
        settings = _settings(config, function)
        assert settings.campaign_email_provider == "postmark"
        assert settings.campaign_email_page_size <= 500  # one Postmark batch; the timeout below fits it
    page_events = config["functions"]["pageWorker"]["events"]
    assert [e["sqs"]["arn"] for e in page_events] == [
        {"Fn::GetAtt": [f"{lane}DispatchQueue", "Arn"]} for lane in ("", "Critical", "Bulk")
    ]
    for function in ("deliveryWorker", "sweeper"):
        env = function_environment(config, function)
        assert not {"POSTMARK_API_KEY", "CAMPAIGN_UNSUBSCRIBE_SECRET"} & env.keys(), function
        assert _settings(config, function).campaign_email_provider == "none"
    # Bounce and complaint feedback reaches the API only, which alone holds the webhook credentials.
    api = _settings(config, "api")
    assert api.postmark_webhook_username == "postmark-feedback"
    assert api.postmark_webhook_password is not None
    for function in ("pageWorker", "deliveryWorker", "sweeper"):
        assert "POSTMARK_WEBHOOK_PASSWORD" not in function_environment(config, function), function


def test_timeouts_fit_the_work_and_the_edges(config: dict[str, Any]) -> None:
    functions = config["functions"]
    # An email page of 500: three graph transactions (up to 30 s of driver retries each), rendering,
    # one Postmark batch and the stream check. Cut off after its claim, a page loses those emails.
    assert 300 <= functions["pageWorker"]["timeout"] <= 900  # 900 s: Lambda's maximum
    assert (
        functions["api"].get("timeout", config["provider"]["timeout"]) <= 30
    )  # API Gateway gives up at 30 s


def _package_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("lambda_package", ROOT / "infra" / "lambda" / "package.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve the module's annotations through sys.modules
    spec.loader.exec_module(module)
    return module


def test_runtime_architecture_and_one_artifact(config: dict[str, Any]) -> None:
    provider = config["provider"]
    assert provider["runtime"] == "python3.11"
    assert provider["architecture"] == "x86_64"
    assert config["package"] == {"individually": False, "artifact": "build/lambda/campaign-engine.zip"}
    for name, spec in config["functions"].items():
        assert not {"runtime", "architecture", "package", "image"} & spec.keys(), name
    target = _package_script().read_target(ROOT / "serverless.yml")
    assert (target.runtime, target.python_version) == ("python3.11", "3.11")
    assert target.platform == "manylinux2014_x86_64"
    assert target.artifact == ROOT / config["package"]["artifact"]
    assert "build/" in (ROOT / ".gitignore").read_text().splitlines()


def test_make_lambda_package_builds_the_deployed_artifact() -> None:
    """The target runs the script with no --output, so it writes serverless.yml's package.artifact."""
    recipe = subprocess.run(
        ["make", "-n", "--no-print-directory", "lambda-package"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    assert recipe[-1].split() == [".venv/bin/python", "infra/lambda/package.py"]


def test_deployment_page_lists_every_ssm_parameter(config: dict[str, Any]) -> None:
    page = (ROOT / "docs" / "deployment.md").read_text()
    section = page.split("\n## AWS Lambda\n", 1)[1].split("\n## ", 1)[0]
    for name in sorted(ssm_parameter_names(config, stage="<stage>")):
        assert f"`{name}`" in section, name


def test_lanes_have_queues_and_event_sources_of_their_own(config: dict[str, Any]) -> None:
    """docs/lanes.md: critical and bulk page and delivery jobs travel on queues of their own, each with
    its own event source mapping (bulk capped so it never holds every instance), dead-lettering as
    their main queue does; the functions know the lanes' URLs and may use the queues."""
    resources = config["resources"]["Resources"]
    statements = config["provider"]["iam"]["role"]["statements"]
    allowed = [arn for statement in statements for arn in statement["Resource"]]
    for kind, function in (("Dispatch", "pageWorker"), ("Delivery", "deliveryWorker")):
        main = _res(config, f"{kind}Queue", "AWS::SQS::Queue")
        events = {e["sqs"]["arn"]["Fn::GetAtt"][0]: e["sqs"] for e in config["functions"][function]["events"]}
        for lane in ("Critical", "Bulk"):
            name = f"{lane}{kind}Queue"
            properties = _res(config, name, "AWS::SQS::Queue")
            assert properties["RedrivePolicy"] == main["RedrivePolicy"]
            assert properties["VisibilityTimeout"] == main["VisibilityTimeout"]
            assert events[name]["functionResponseType"] == "ReportBatchItemFailures"
            assert {"Fn::GetAtt": [name, "Arn"]} in allowed
        assert events[f"Bulk{kind}Queue"]["maximumConcurrency"] == 2
        assert "maximumConcurrency" not in events[f"Critical{kind}Queue"]
    settings = _settings(config, "pageWorker")
    assert settings.campaign_lane_queue_urls == {
        kind: {lane: f"https://sqs.example/{lane}-{kind}" for lane in ("critical", "bulk")}
        for kind in ("dispatch", "delivery")
    }
    assert set(resources) >= {"CriticalDispatchQueue", "BulkDeliveryQueue"}
