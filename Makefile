# The two set-up commands of README's Quick start: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PORT ?= 8000

.PHONY: install run test test-fast lint bench clean vllm-check

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev,s3]'
	# The Every Eval Ever schema the exports are validated against (tests/exports): its wheel,
	# for Python 3.12 and up, is kept to be read, never installed.
	$(BIN)/pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 \
		--dest $(VENV)/schemas every-eval-ever==0.3.0
	touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(BIN)/python -m embedded.run

# The suite runs on PostgreSQL (as in production) and Redis: throwaway servers of its own
# (tests/servers.py, which also brings the loopback interface up in a fresh network namespace),
# or the ones TEST_DATABASE_URL and TEST_REDIS_URL name. In TEST_WORKERS processes
# (pytest-xdist; 0 runs it in this one): most of the integration tests wait on workers, judges
# and browsers, so more processes than cores still help; each free worker takes the next test.
TEST_WORKERS ?= 4
FAST_WORKERS ?= 2

# Bytecode is kept for the suite's runs even where the machine says not to write it
# (PYTHONDONTWRITEBYTECODE=1): without it each pytest process rewrites the asserts of every test
# module again, 14 s of CPU a process against 7 s once kept (`pytest --collect-only`,
# 2026-12-06). An empty value lets Python write it.
test test-fast: export PYTHONDONTWRITEBYTECODE :=

test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/lint-imports
	$(BIN)/python -m tests.servers $(BIN)/pytest -n $(TEST_WORKERS) --dist worksteal

# The quick check while working: every test that starts no process (no simulator, worker,
# server, browser or manage.py subprocess: those are marked `integration`, tests/conftest.py)
# and is not `slow` (a crawl of the whole site, a full-size file, many clients at once,
# migrations back and forth, a real timeout, over half a second: pyproject.toml). `make test`
# runs them all.
# These keep a core busy, so one process a core.
test-fast: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/python -m tests.servers $(BIN)/pytest -m "not integration and not slow" \
		-n $(FAST_WORKERS)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/lint-imports

bench: $(STAMP)
	$(BIN)/python bench/score_throughput.py

# The judge client and simulator checked against vLLM's own code (docs/judge.md, "Conformance
# with vLLM 0.33"): vLLM in its own cached environment (~10 GB, installed when missing),
# `vllm launch render` of a stand-in Qwen3-Omni with launch_qwen3_omni.sh's flags. Not part of
# `make test`; run it before changing the judge client, the simulator or the vLLM pin.
vllm-check: $(STAMP)
	$(BIN)/python checks/vllm_check.py

clean:
	rm -rf $(VENV) var
