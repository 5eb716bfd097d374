PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install run test lint bench eval clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	# The CPU build of torch must come first: a bare torch requirement pulls a multi-GB CUDA build.
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	HF_HUB_OFFLINE=1 $(BIN)/engramlog up

test: $(STAMP)
	HF_HUB_OFFLINE=1 $(BIN)/python -m pytest -q tests

lint: $(STAMP)
	$(BIN)/ruff check .

bench: $(STAMP)
	HF_HUB_OFFLINE=1 $(BIN)/python -m bench.run_all

eval: $(STAMP)
	HF_HUB_OFFLINE=1 $(BIN)/engramlog eval locomo --data ../shared/eval/locomo/locomo_dev.json

clean:
	rm -rf $(VENV) .engramlog
