# The two set-up commands of README's Quick start: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PORT ?= 8000
# The suite runs on PostgreSQL (as in production); override for a quick local run.
TEST_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/mmae_board

.PHONY: install run test lint bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev,s3]'
	touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(BIN)/python -m config.run

test: $(STAMP)
	$(BIN)/ruff check .
	DATABASE_URL=$(TEST_DATABASE_URL) $(BIN)/pytest

lint: $(STAMP)
	$(BIN)/ruff check .

bench: $(STAMP)
	$(BIN)/python bench/score_throughput.py

clean:
	rm -rf $(VENV) var
