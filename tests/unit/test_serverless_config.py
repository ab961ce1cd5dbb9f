"""serverless.yml regression: the workers' complete VPC egress path and the SQS queue wiring.

A Lambda in a private subnet reaches webhook receivers only through the whole chain
PrivateSubnetA -> PrivateRouteTable -> PrivateRoute (0.0.0.0/0) -> NatGateway in PublicSubnetA with an
Elastic IP -> PublicRouteTable -> PublicRoute -> InternetGateway attached to the VPC. One missing link
and every webhook times out in production, so each link is asserted.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]


class _CfnLoader(yaml.SafeLoader):
    """Reads CloudFormation short tags (!Ref, !GetAtt, ...) as {"Ref": ...} style mappings."""


def _tag(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> Any:
    name = "Ref" if suffix == "Ref" else f"Fn::{suffix}"
    if isinstance(node, yaml.ScalarNode):
        value: Any = loader.construct_scalar(node)
        if suffix == "GetAtt":
            value = value.split(".", 1)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        value = loader.construct_mapping(node, deep=True)  # type: ignore[arg-type]
    return {name: value}


_CfnLoader.add_multi_constructor("!", _tag)


@pytest.fixture(scope="module")
def config() -> dict[str, Any]:
    return yaml.load((ROOT / "serverless.yml").read_text(), Loader=_CfnLoader)


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
    ],
)
def test_queue_wiring(config: dict[str, Any], function: str, queue: str, dlq: str, handler: str) -> None:
    spec = config["functions"][function]
    assert spec["handler"] == handler
    (event,) = spec["events"]
    assert event["sqs"]["arn"] == {"Fn::GetAtt": [queue, "Arn"]}
    assert event["sqs"]["functionResponseType"] == "ReportBatchItemFailures"
    properties = _res(config, queue, "AWS::SQS::Queue")
    assert properties["RedrivePolicy"]["deadLetterTargetArn"] == {"Fn::GetAtt": [dlq, "Arn"]}
    assert properties["RedrivePolicy"]["maxReceiveCount"] >= 1
    _res(config, dlq, "AWS::SQS::Queue")
    assert properties["VisibilityTimeout"] >= spec["timeout"]  # a batch never reappears mid-run
    env = config["provider"]["environment"]
    assert env["CAMPAIGN_DISPATCH_QUEUE_URL"] == {"Ref": "DispatchQueue"}
    assert env["CAMPAIGN_DELIVERY_QUEUE_URL"] == {"Ref": "DeliveryQueue"}
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
