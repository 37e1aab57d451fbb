# maasflow — `make help` lists the targets.
GO        ?= go
GOFLAGS   ?=
FUNCTIONS := $(patsubst functions/%/main.go,%,$(wildcard functions/*/main.go))
ASL_FILES := $(wildcard statemachines/*.asl.json)
NODE_BIN  := node_modules/.bin
# golangci-lint is pinned in tools.mod, so its dependencies stay out of go.mod.
LINT      := $(GO) tool -modfile=tools.mod golangci-lint

# The version and commit `maasflow version` reports (and the connector's
# heartbeat): the nearest tag, else the commit, "-dirty" with local changes.
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo unknown)
COMMIT    ?= $(shell git rev-parse HEAD 2>/dev/null)
ADMIN_PKG := github.com/maasflow/maasflow/cmd/maasflow/internal/admin
CLI_LDFLAGS := -X $(ADMIN_PKG).version=$(VERSION) -X $(ADMIN_PKG).commit=$(COMMIT) -X main.connectorVersion=$(VERSION)

# jsii (the CDK's Go bindings) prints a large end-of-life banner on Node 20.
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 20

.DEFAULT_GOAL := help
.PHONY: help run install test bench build synth lint fmt-check vet tidy-check asl-validate asl-generate go-test fuzz clean

help: ## list the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'

run: ## start the embedded stack with the MAAS simulator and demo data
	$(GO) run ./cmd/maasflow local --demo

install: ## install the maasflow CLI into GOBIN (default ~/go/bin), version and commit stamped
	$(GO) install -ldflags "$(CLI_LDFLAGS)" ./cmd/maasflow

test: lint asl-validate go-test fuzz ## lint, asl-validator, go test -race ./..., bounded fuzzing

fmt-check: ## fail when a Go file is not gofmt-clean
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './node_modules/*')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet: ## go vet ./...
	$(GO) vet ./...

lint: fmt-check vet ## gofmt check, go vet, shellcheck, golangci-lint (.golangci.yml)
	@command -v shellcheck >/dev/null 2>&1 || { \
		echo "lint: shellcheck not found; install the Debian package: apt-get install -y shellcheck" >&2; exit 1; }
	shellcheck .ci/run shared/enroll/scripts/*.sh localstack/fenced.sh
	$(LINT) run ./...

# CI only: it needs git and rewrites the module files when they are not tidy.
# tools.mod is tidied from an empty directory: from here, tidy would add every
# import of this module to it.
tidy-check: ## fail when go mod tidy changes go.mod/go.sum or tools.mod/tools.sum
	$(GO) mod tidy
	git diff --exit-code go.mod go.sum
	@set -e; tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; touch "$$tmp/go.mod"; \
		cd "$$tmp" && $(GO) mod tidy -modfile="$(CURDIR)/tools.mod"
	git diff --exit-code tools.mod tools.sum

$(NODE_BIN)/asl-validator: package.json package-lock.json
	npm ci --no-audit --no-fund
	@touch $@

asl-validate: $(NODE_BIN)/asl-validator ## validate statemachines/*.asl.json with asl-validator (pinned in package.json)
	@set -e; for f in $(ASL_FILES); do $(NODE_BIN)/asl-validator --json-path $$f; done

asl-generate: ## write statemachines/*.asl.json from their sources in statemachines/src
	$(GO) generate ./statemachines

go-test: ## go test -race ./...
	$(GO) test -race -count=1 ./...

# Every fuzz target's seeds run in go-test; this also mutates them for
# FUZZTIME each. go test -fuzz takes one target per run: two runs at a time,
# one worker each, keep the whole step near 20 s. The budget is a count of
# executions, not a duration: a duration's deadline can race a worker's
# shutdown in Go 1.26's fuzz coordinator and fail with a bare "context
# deadline exceeded" and no crasher (golang/go#75804, fixed in Go 1.27).
FUZZ_PKGS := ./shared/api
FUZZTIME  ?= 500x
fuzz: ## run each request-decoder fuzz target for FUZZTIME executions (default 500x)
	@set -e; for pkg in $(FUZZ_PKGS); do \
		$(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' | \
			xargs -P 2 -I{} sh -c 'echo "fuzz $$1 $$2"; out=$$($(GO) test -run "^\$$" -fuzz "^$$2\$$" -fuzztime $(FUZZTIME) -parallel 1 $$1 2>&1) || { echo "$$out"; exit 255; }' _ $$pkg {}; \
	done

bench: ## run the benchmarks recorded in docs/benchmarks.md
	$(GO) test -run '^$$' -bench . -benchmem -timeout 60m ./...

build: ## one linux/arm64 bootstrap per function, for provided.al2023
	@set -e; for f in $(FUNCTIONS); do \
		echo "build functions/$$f"; \
		GOOS=linux GOARCH=arm64 CGO_ENABLED=0 $(GO) build -tags lambda.norpc -trimpath -ldflags='-s -w' \
			-o bin/$$f/bootstrap ./functions/$$f; \
	done

synth: build ## synthesise the CDK app into cdk.out (needs node)
	CDK_OUTDIR=cdk.out $(GO) run ./infra

clean: ## remove build output
	rm -rf bin cdk.out

# --- AWS deployment (docs/deploy.md). The CDK CLI is pinned; node is required.
CDK       ?= npx --yes aws-cdk@2.1148.1
.PHONY: deploy

deploy: ## build every function, then cdk deploy the stage: make deploy STAGE=prod [CDK_ARGS='-c …']
	@test -n "$(STAGE)" || { echo "make deploy: name the stage, e.g. make deploy STAGE=dev (docs/deploy.md)" >&2; exit 2; }
	$(MAKE) build
	$(CDK) deploy --require-approval broadening -c maasflow:stage=$(STAGE) $(CDK_ARGS)

# --- LocalStack profile (needs Docker and a LocalStack auth token; CI has neither).
# docs/deploy.md, "LocalStack". Every AWS call goes through localstack/fenced.sh:
# a loopback LocalStack URL only, LocalStack's test keys only.
LOCALSTACK_URL ?= http://localhost:4566
CDKLOCAL  ?= npx --yes -p aws-cdk@2.1148.1 -p aws-cdk-local@3.0.4 cdklocal
LOCALSTACK_RUN := LOCALSTACK_URL=$(LOCALSTACK_URL) sh localstack/fenced.sh
# The functions run natively in LocalStack's Lambda containers: built and
# declared for the Docker host's architecture.
LOCALSTACK_GOARCH ?= $(shell $(GO) env GOARCH)
LOCALSTACK_BIN    := localstack/.build
LOCALSTACK_OUTPUTS := localstack/.build/outputs.json
# The admin API's JWT issuer is the one `make localstack-test` serves on the
# Docker host (test/stack, MAASFLOW_STACK_ISSUER_LISTEN), reached from
# LocalStack as host.docker.internal; the audience is its client.
LOCALSTACK_ISSUER_PORT ?= 8471
LOCALSTACK_SIM_PORT    ?= 8472
LOCALSTACK_JWT_ISSUER   ?= http://host.docker.internal:$(LOCALSTACK_ISSUER_PORT)
LOCALSTACK_JWT_AUDIENCE ?= maasflow-localstack
# Exactly what the dev template, its functions, cdk bootstrap and the
# connector transport tests use (TestLocalStackProfile checks it against the
# synthesized template).
LOCALSTACK_SERVICES := apigateway,backup,cloudformation,cloudwatch,dynamodb,ecr,events,iam,lambda,logs,s3,scheduler,schemas,secretsmanager,sns,sqs,ssm,stepfunctions,sts
.PHONY: localstack-up localstack-deploy localstack-test localstack-down

localstack-up: ## start LocalStack in Docker (localstack/compose.yaml; needs LOCALSTACK_AUTH_TOKEN) and wait until healthy
	@test -n "$$LOCALSTACK_AUTH_TOKEN" || { echo "make localstack-up: set LOCALSTACK_AUTH_TOKEN (docs/deploy.md, LocalStack): the image starts only with one" >&2; exit 2; }
	LOCALSTACK_SERVICES=$(LOCALSTACK_SERVICES) docker compose -f localstack/compose.yaml up -d --wait

localstack-deploy: ## build the functions for this host's architecture, then deploy the dev stage to LocalStack with cdklocal
	@set -e; for f in $(FUNCTIONS); do \
		echo "build functions/$$f ($(LOCALSTACK_GOARCH))"; \
		GOOS=linux GOARCH=$(LOCALSTACK_GOARCH) CGO_ENABLED=0 $(GO) build -tags lambda.norpc -trimpath -ldflags='-s -w' \
			-o $(LOCALSTACK_BIN)/$$f/bootstrap ./functions/$$f; \
	done
	$(LOCALSTACK_RUN) $(CDKLOCAL) bootstrap aws://000000000000/us-east-1
	MAASFLOW_ASSET_DIR=$(CURDIR)/$(LOCALSTACK_BIN) $(LOCALSTACK_RUN) $(CDKLOCAL) deploy --require-approval never \
		-c maasflow:stage=dev -c maasflow:architecture=$(LOCALSTACK_GOARCH) \
		--parameters JwtIssuer=$(LOCALSTACK_JWT_ISSUER) --parameters JwtAudience=$(LOCALSTACK_JWT_AUDIENCE) \
		--outputs-file $(LOCALSTACK_OUTPUTS) $(CDK_ARGS)

localstack-test: ## the stack lane's scenarios against the deployed stack, then the e2e suite with the connector on LocalStack's SQS and DynamoDB
	$(LOCALSTACK_RUN) env MAASFLOW_STACK_TARGET=localstack MAASFLOW_STACK_OUTPUTS=$(CURDIR)/$(LOCALSTACK_OUTPUTS) \
		MAASFLOW_STACK_ISSUER=$(LOCALSTACK_JWT_ISSUER) MAASFLOW_STACK_AUDIENCE=$(LOCALSTACK_JWT_AUDIENCE) \
		MAASFLOW_STACK_ISSUER_LISTEN=0.0.0.0:$(LOCALSTACK_ISSUER_PORT) \
		MAASFLOW_STACK_SIM_LISTEN=0.0.0.0:$(LOCALSTACK_SIM_PORT) MAASFLOW_STACK_SIM_URL=http://host.docker.internal:$(LOCALSTACK_SIM_PORT) \
		$(GO) test -count=1 -timeout 60m -run 'TestScenarios' -v ./test/stack/
	$(LOCALSTACK_RUN) env MAASFLOW_LOCALSTACK_URL=$(LOCALSTACK_URL) $(GO) test -tags localstack -count=1 ./shared/connector/sqsrelay/ ./test/e2e/

localstack-down: ## stop LocalStack
	LOCALSTACK_SERVICES=$(LOCALSTACK_SERVICES) LOCALSTACK_AUTH_TOKEN=unused docker compose -f localstack/compose.yaml down
