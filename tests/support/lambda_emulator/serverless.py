"""Reading ``serverless.yml`` as deployed: CloudFormation short tags, each function's environment, and
its values resolved (Serverless variables, then ``!Ref``/``!GetAtt``)."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml

__all__ = [
    "ACCOUNT_ID",
    "REPO_ROOT",
    "CfnLoader",
    "function_environment",
    "load_serverless",
    "resolve_value",
    "ssm_parameter_names",
]

ACCOUNT_ID = "123456789012"
REPO_ROOT = Path(__file__).resolve().parents[3]


class CfnLoader(yaml.SafeLoader):
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


CfnLoader.add_multi_constructor("!", _tag)


def load_serverless(path: Path = REPO_ROOT / "serverless.yml") -> dict[str, Any]:
    return dict(yaml.load(path.read_text(encoding="utf-8"), Loader=CfnLoader))


_SSM = re.compile(r"\$\{ssm:([^{}]*(?:\$\{sls:stage\}[^{}]*)*)\}")
_VARIABLE = re.compile(r"\$\{([^{}]+)\}")
_SUB = re.compile(r"\$\{([A-Za-z][A-Za-z0-9]*)(\.Arn)?\}")  # Fn::Sub's ${Resource} and ${Resource.Arn}


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def ssm_parameter_names(config: Mapping[str, Any], *, stage: str = "${sls:stage}") -> set[str]:
    """Every SSM parameter the file reads, with ``${sls:stage}`` written as ``stage``."""
    return {
        match.group(1).replace("${sls:stage}", stage)
        for text in _strings(config)
        for match in _SSM.finditer(text)
    }


def function_environment(config: Mapping[str, Any], function: str) -> dict[str, Any]:
    """What Lambda gets for one function: ``provider.environment`` overlaid with the function's own."""
    provider = dict(config["provider"].get("environment") or {})
    own = dict(config["functions"][function].get("environment") or {})
    return {**provider, **own}


def resolve_value(
    value: Any,
    *,
    stage: str,
    ssm: Mapping[str, str],
    refs: Mapping[str, str],
    arns: Mapping[str, str],
) -> str:
    """One environment value as deployed: Serverless variables, then CloudFormation intrinsics.

    Anything this cannot resolve raises, so a new ``${...}`` source or ``!Ref`` in serverless.yml
    fails the emulation loudly instead of reaching a handler as literal text.
    """
    if isinstance(value, Mapping):
        if set(value) == {"Ref"}:
            return refs[value["Ref"]]
        if set(value) == {"Fn::GetAtt"} and value["Fn::GetAtt"][1] == "Arn":
            return arns[value["Fn::GetAtt"][0]]
        if set(value) == {"Fn::Sub"} and isinstance(value["Fn::Sub"], str):  # ${Name}: its Ref
            return _SUB.sub(lambda m: arns[m[1]] if m[2] else refs[m[1]], value["Fn::Sub"])
        raise ValueError(f"cannot resolve {value!r}")
    if isinstance(value, bool):
        return "true" if value else "false"
    text = str(value)

    def variable(match: re.Match[str]) -> str:
        source = match.group(1).strip()
        if source == "sls:stage":
            return stage
        if source.startswith("ssm:"):
            name = source.removeprefix("ssm:")
            if name not in ssm:
                raise KeyError(f"serverless.yml reads SSM parameter {name}; give the emulation a value")
            return ssm[name]
        raise ValueError(f"unsupported Serverless variable ${{{source}}}")

    while True:  # innermost first: ${ssm:/x/${sls:stage}/y}
        text, count = _VARIABLE.subn(variable, text)
        if not count:
            return text
