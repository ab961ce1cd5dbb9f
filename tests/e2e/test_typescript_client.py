"""The generated TypeScript client: its declarations are the routers', and every
procedure type-checks with the real ``@trpc/client`` v11 and v10 under ``tsc``.

The committed ``clients/typescript/src/procedures.ts`` is regenerated here from the routers and must be
byte-identical (``make client`` writes it). The type test compiles, for every procedure, a call with its
own input type, and, each marked ``@ts-expect-error`` (so tsc fails unless each really is an error), a
call with a wrong input and a call of the wrong kind; plus the hand-written calls in
``clients/typescript/test``. Node's ``npm ci`` installs the pinned packages from the committed locks.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from campaign_engine.api.app import ROUTERS
from campaign_engine.api.client_schema import client_schema

# pytest-xdist: npm ci into clients/typescript (one folder for every worker): one worker runs it.
pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("test_typescript_client")]

PACKAGE = Path(__file__).resolve().parents[2] / "clients" / "typescript"
V10 = PACKAGE / "test" / "v10"
PROCEDURES = sorted((p for router in ROUTERS for p in router.procedures), key=lambda p: p.path)


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.fail(f"'{name}' is required for the TypeScript client test (install Node.js and npm)")
    return path


@pytest.fixture(scope="module")
def installed() -> Path:
    """``npm ci`` of the package (v11, the generator, tsc) and of the v10 half of the type test."""
    npm = _tool("npm")
    for where in (PACKAGE, V10):
        if not (where / "node_modules" / ".package-lock.json").exists():
            subprocess.run([npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=where, check=True,
                           timeout=300)  # fmt: skip
    return PACKAGE / "node_modules" / ".bin" / "tsc"


def test_the_committed_declarations_are_generated_from_the_routers(installed: Path, tmp_path: Path) -> None:
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps(client_schema(PROCEDURES), indent=1) + "\n")
    out = tmp_path / "procedures.ts"
    node = _tool("node")
    subprocess.run(
        [node, "scripts/generate.mjs", str(schema), str(out)], cwd=PACKAGE, check=True, timeout=120
    )
    committed = (PACKAGE / "src" / "procedures.ts").read_text()
    assert out.read_text() == committed, "clients/typescript/src/procedures.ts is stale: run `make client`"
    for proc in PROCEDURES:  # every procedure is in it, with its kind
        assert f'"{proc.path}": {{\n    kind: "{proc.kind}";' in committed, proc.path


def _every_procedure(client: str, module: str) -> str:
    lines = [
        f'import {{ {client}, httpBatchLink }} from "@trpc/client";',
        f'import type {{ AppRouter, ProcedureInput, ProcedurePath }} from "{module}";',
        f'const api = {client}<AppRouter>({{ links: [httpBatchLink({{ url: "http://127.0.0.1/trpc" }})] }});',
        "declare function input<P extends ProcedurePath>(): ProcedureInput<P>;",
        "export async function every(): Promise<void> {",
    ]
    for proc in PROCEDURES:
        call, other = ("query", "mutate") if proc.kind == "query" else ("mutate", "query")
        lines += [
            f'  await api.{proc.path}.{call}(input<"{proc.path}">());',
            "  // @ts-expect-error a wrong input",
            f"  await api.{proc.path}.{call}({{ notAField: true }});",
            f"  // @ts-expect-error {proc.path} is a {proc.kind}",
            f"  void api.{proc.path}.{other};",
        ]
    return "\n".join([*lines, "}", ""])


def _compile(tsc: Path, project: Path, files: list[Path], paths: dict[str, list[str]] | None = None) -> None:
    options = {
        "target": "ES2022", "module": "ESNext", "moduleResolution": "Bundler", "strict": True,
        "noEmit": True, "skipLibCheck": True, "types": [],
    }  # fmt: skip
    if paths is not None:
        options |= {"baseUrl": str(project), "paths": paths}
    config = project / "tsconfig.json"
    config.write_text(json.dumps({"compilerOptions": options, "files": [str(f) for f in files]}))
    run = subprocess.run([str(tsc), "-p", str(config)], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr


def test_every_procedure_type_checks_with_trpc_client_v11(installed: Path, tmp_path: Path) -> None:
    every = tmp_path / "every.ts"
    every.write_text(_every_procedure("createTRPCClient", str(PACKAGE / "src" / "index")))
    # Resolved from the package's own node_modules: the v11 client and server.
    _compile(installed, tmp_path, [every, PACKAGE / "test" / "calls.ts"], {
        "@trpc/client": [str(PACKAGE / "node_modules/@trpc/client")],
        "@trpc/server": [str(PACKAGE / "node_modules/@trpc/server")],
        "client-under-test": [str(PACKAGE / "test" / "client.ts")],
    })  # fmt: skip


def test_every_procedure_type_checks_with_trpc_client_v10(installed: Path, tmp_path: Path) -> None:
    every = tmp_path / "every.ts"
    every.write_text(_every_procedure("createTRPCProxyClient", str(PACKAGE / "src" / "v10")))
    _compile(installed, tmp_path, [every, PACKAGE / "test" / "calls.ts"], {
        "@trpc/client": [str(V10 / "node_modules/@trpc/client")],
        "@trpc/server": [str(V10 / "node_modules/@trpc/server")],
        "client-under-test": [str(V10 / "client.ts")],
    })  # fmt: skip


def test_a_wrong_call_fails_the_type_check(installed: Path, tmp_path: Path) -> None:
    """The check can fail: a well-typed call marked as an error, and a wrong one unmarked, both do."""
    wrong = tmp_path / "wrong.ts"
    wrong.write_text(
        "\n".join([
            'import { createTRPCClient, httpBatchLink } from "@trpc/client";',
            f'import type {{ AppRouter }} from "{PACKAGE / "src" / "index"}";',
            'const api = createTRPCClient<AppRouter>({ links: [httpBatchLink({ url: "x" })] });',
            'export const bad = api.campaigns.get.query({ campaignId: 7 });',
        ])
    )  # fmt: skip
    with pytest.raises(AssertionError, match="TS2322"):
        _compile(installed, tmp_path, [wrong], {
            "@trpc/client": [str(PACKAGE / "node_modules/@trpc/client")],
            "@trpc/server": [str(PACKAGE / "node_modules/@trpc/server")],
        })  # fmt: skip
