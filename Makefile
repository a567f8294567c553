# nmtkit: `make demo` and `make test` do all set-up on a fresh clone (a .venv with the CPU torch).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
# This machine's local CPU wheel; the package itself only asks for torch>=2.2.
TORCH  ?= torch==2.13.0
STAMP  := $(VENV)/.installed

.PHONY: install test lint demo bench bench-quality clean

install: $(STAMP)

$(STAMP): pyproject.toml Makefile
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --disable-pip-version-check "$(TORCH)"
	$(BIN)/python -m pip install -q --disable-pip-version-check -e ".[dev]"
	touch $(STAMP)

lint: install
	$(BIN)/ruff check nmtkit tests benchmarks
	$(BIN)/mypy nmtkit

# Two workers, one torch thread each; tests sharing a trained model share a worker (loadgroup).
test: install lint
	$(BIN)/python -m pytest -n 2 --dist loadgroup

demo: install
	PATH="$(CURDIR)/$(BIN):$$PATH" bash benchmarks/demo.sh

bench-quality: install
	PATH="$(CURDIR)/$(BIN):$$PATH" bash benchmarks/multi30k.sh

bench: bench-quality

clean:
	rm -rf $(VENV) demo bench-out .pytest_cache .mypy_cache .ruff_cache
