# The two commands a newcomer needs: `make dev` (run the product) and `make test` (the whole suite).
# Both work from a fresh clone: they create .venv, install the package, build the Neo4j launcher and
# start what they need, and stop what they started.
PYTHON ?= python3
# Bytecode caches are what let a process import the package and its libraries from .pyc: without them a
# `campaign-engine` process compiles every module it imports, each time (importing the wiring: 2.0 s
# of CPU instead of 0.9 s), and pytest rewrites every test module in every worker. Some machines set
# this variable for everything; the clone's own __pycache__ folders are gitignored.
unexport PYTHONDONTWRITEBYTECODE
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
LAUNCHER := infra/neo4j/target/neo4j-launcher.jar
# Its class-data-sharing archive, one per JDK build (local_neo4j.py): every Neo4j the suite and make dev
# start maps it. Asked for on every run, as the launcher picks the newest JDK installed: a new one gets
# its own archive (one `campaign-engine` start when it is already there).
CLASS_ARCHIVE := class-archive
# The admin console (admin/): npm ci from the committed lock, then esbuild into the package (gitignored).
ADMIN_MODULES := admin/node_modules/.package-lock.json
ADMIN_ASSETS := campaign_engine/api/admin_static/manifest.json
# make dev's OpenID provider (devidp/: node-oidc-provider), npm ci from its committed lock like admin/.
DEVIDP_MODULES := devidp/node_modules/.package-lock.json
# The TypeScript client's packages (clients/typescript): `make client` and the suite's client test.
CLIENT_MODULES := clients/typescript/node_modules/.package-lock.json
# `make test` runs pytest-xdist workers, each a session with its own database, all in one Neo4j JVM
# (1 GiB of heap per worker; tests/conftest.py). Much of the suite waits on processes and sockets, so
# on 2 cores it runs more workers than cores, but each database plans its own statements.
# TEST_WORKERS=0 runs it in one process.
TEST_WORKERS ?= 3

.PHONY: class-archive dev test lint typecheck docs unit bench chaos install system-deps clean lambda-package admin-assets client

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet uv
	$(BIN)/uv pip install --quiet --compile-bytecode --python $(BIN)/python -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

$(LAUNCHER): infra/neo4j/pom.xml $(wildcard infra/neo4j/src/main/java/dev/campaignengine/neo4j/*.java)
	cd infra/neo4j && mvn -q -B package -DskipTests

$(CLASS_ARCHIVE): $(LAUNCHER) | $(STAMP)
	$(BIN)/campaign-engine neo4j archive

$(ADMIN_MODULES): admin/package.json admin/package-lock.json
	cd admin && npm ci --no-audit --no-fund --loglevel=error
	touch $@

$(ADMIN_ASSETS): $(ADMIN_MODULES) admin/build.mjs $(wildcard admin/src/*)
	cd admin && node build.mjs

admin-assets: $(ADMIN_ASSETS)

$(DEVIDP_MODULES): devidp/package.json devidp/package-lock.json
	cd devidp && npm ci --no-audit --no-fund --loglevel=error
	touch $@

# Test-only system packages: Debian's Chromium for the unsubscribe-page browser test.
system-deps:
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	  else echo "install Debian's chromium package (sudo apt-get install chromium)" >&2; exit 1; fi; }

dev: $(STAMP) $(LAUNCHER) $(CLASS_ARCHIVE) $(ADMIN_ASSETS) $(DEVIDP_MODULES)
	$(BIN)/campaign-engine dev

lint: $(STAMP)
	$(BIN)/ruff check campaign_engine tests bench infra
	$(BIN)/ruff format --check campaign_engine tests bench infra

typecheck: $(STAMP) $(ADMIN_MODULES)
	$(BIN)/mypy
	cd admin && node_modules/.bin/tsc --noEmit

# The documentation site (mkdocs.yml, docs/): every relative link must resolve; built into .local/site.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir .local/site

# The Node packages the suite's client tests drive (tRPC v10 and v11, LearnCard's receiver stack, the
# TypeScript client), from their committed locks. Each test still installs what it finds missing, so
# `pytest` alone works too. LearnCard's client is left to its test: its install waits on the network
# for most of a minute on a cold cache, which a worker hides behind the others' work and the set-up
# would not.
TEST_CLIENT_MODULES := tests/e2e/trpc_client/node_modules/.package-lock.json \
	tests/e2e/learncard_receiver/node_modules/.package-lock.json \
	clients/typescript/test/v10/node_modules/.package-lock.json

$(TEST_CLIENT_MODULES): %/node_modules/.package-lock.json: %/package-lock.json
	cd $* && npm ci --no-audit --no-fund --loglevel=error
	touch $@

# What the suite needs, built side by side: the installs wait on the network while the class archive and
# mypy use the cores (a fresh clone's set-up: 52 s this way, 93 s one after another).
TEST_SETUP := $(STAMP) $(LAUNCHER) $(CLASS_ARCHIVE) $(ADMIN_ASSETS) $(DEVIDP_MODULES) $(CLIENT_MODULES) \
	$(TEST_CLIENT_MODULES) system-deps lint typecheck docs

test:
	$(MAKE) --no-print-directory --jobs=3 --output-sync=target $(TEST_SETUP)
	$(BIN)/pytest -q --durations=15 -n $(TEST_WORKERS) --dist loadgroup

unit: $(STAMP)
	$(BIN)/pytest -q tests/unit

# The AWS Lambda zip serverless.yml deploys (its package.artifact), for its runtime and architecture.
lambda-package: $(STAMP)
	$(BIN)/python infra/lambda/package.py

# A seeded chaos run (bench/chaos.py): make dev's processes, faults at moments the seed picks, then the
# delivery promises checked. SEED=2 MINUTES=5 make chaos; the same command reproduces a failing seed.
# Not part of `make bench` (it checks, it does not measure); its short run is in `make test`.
chaos: $(STAMP) $(LAUNCHER) $(CLASS_ARCHIVE) $(ADMIN_ASSETS)
	$(BIN)/python -m bench.chaos --seed $${SEED:-1} --minutes $${MINUTES:-10} --recipients $${RECIPIENTS:-20000}

bench: $(STAMP) $(LAUNCHER) $(CLASS_ARCHIVE)
	@for script in bench/*.py; do \
	  case "$$script" in */__init__.py|*/_*|*/chaos.py) continue;; esac; \
	  echo "== $$script"; $(BIN)/python -m bench.$$(basename $$script .py) || exit 1; \
	done

clean:
	rm -rf .local infra/neo4j/target campaign_engine/api/admin_static

$(CLIENT_MODULES): clients/typescript/package-lock.json
	cd clients/typescript && npm ci --no-audit --no-fund --loglevel=error

# The TypeScript client's declarations (clients/typescript/src/procedures.ts), from the Python routers.
client: $(STAMP) $(CLIENT_MODULES)
	$(BIN)/python -m campaign_engine.api.client_schema > clients/typescript/.schema.json
	cd clients/typescript && node scripts/generate.mjs .schema.json src/procedures.ts && rm .schema.json
