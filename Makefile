# nmtkit: `make demo` and `make test` do all set-up on a fresh clone (a .venv with the CPU torch).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
# This machine's local CPU wheel; the package itself only asks for torch>=2.4 (pyproject.toml).
TORCH  ?= torch==2.13.0
STAMP  := $(VENV)/.installed

.PHONY: browser page-figure install test lint docs demo bench bench-quality bench-speed bench-peers bench-figure2 bench-align align-figures bench-distributed bench-scale bench-long bench-ensembles bench-serve bench-terms figures gpu-check clean

install: $(STAMP)

$(STAMP): pyproject.toml Makefile
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --disable-pip-version-check "$(TORCH)"
	$(BIN)/python -m pip install -q --disable-pip-version-check -e ".[dev]"
	touch $(STAMP)

lint: install
	$(BIN)/ruff check nmtkit tests benchmarks docs
	$(BIN)/mypy nmtkit
	$(BIN)/lint-imports

# docs/architecture.md is generated from the code and the import-linter contracts.
docs: install
	$(BIN)/python docs/make_architecture.py docs/architecture.md

# The translation page's tests drive Debian's Chromium (tests/cli/test_serve_page.py), installed
# once here as the CPU torch is; NMTKIT_CHROMIUM=/path/to/chromium to use another.
CHROMIUM := /usr/bin/chromium
SUDO     := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

browser: $(CHROMIUM)

$(CHROMIUM):
	$(SUDO) apt-get update -qq
	$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium

# Two workers, one torch thread each; tests sharing a trained model share a worker (loadgroup).
test: install lint browser
	$(BIN)/python -m pytest -n 2 --dist loadgroup

demo: install
	PATH="$(CURDIR)/$(BIN):$$PATH" bash benchmarks/demo.sh

# Benchmarks: run each alone (other work on the 2 cores skews them); outputs go to bench-out/.
RUN := PATH="$(CURDIR)/$(BIN):$$PATH" bash

bench-quality: install  # 30 min of training (BUDGET=15 for 15), BLEU on test_2016_flickr and val; docs/quality.md
	$(RUN) benchmarks/multi30k.sh

bench-speed: install    # ~10 min: roofline, training tok/s and memory, translation sent/s
	$(RUN) benchmarks/speed.sh

bench-peers: install    # ~50 min: nmtkit, fairseq, Marian, OpenNMT-py, Joey NMT side by side (PEERS="fairseq marian" for two)
	$(RUN) benchmarks/peers.sh

bench-figure2: install  # ~35 min: RNNencdec vs RNNsearch, BLEU by sentence length
	$(RUN) benchmarks/paper_figure2.sh

page-figure: install browser  # ~20 s: docs/figures/serve-page.png, serve's page over MODEL (default demo/model)
	$(BIN)/python benchmarks/page_screenshot.py --model $(or $(MODEL),demo/model) --out docs/figures/serve-page.png

figures: install        # ~45 min: remakes docs/figures/ (Figure 2, attention heatmaps, training curves)
	$(RUN) benchmarks/figures.sh

bench-distributed: install  # ~7 min: training tok/s under torchrun, 1 vs 2 processes of 1 thread
	$(RUN) benchmarks/distributed.sh

bench-align: install    # up to 3 h 15 min (6 variants, 30 min each at most): nmtkit align --learn variants vs eflomal, AER on the Hansards gold
	PYTHON="$(CURDIR)/$(BIN)/python" $(RUN) benchmarks/alignment.sh

# After bench-align: its default aligner next to eflomal on a few Hansards pairs (PAIRS=3,17,40).
ALIGN_OUT ?= bench-out/alignment
align-figures: install  # ~1 min: one PNG per pair in $(ALIGN_OUT)/figures
	$(BIN)/python benchmarks/align_figures.py --aligner $(ALIGN_OUT)/aligner.default.pt \
	  --source $(ALIGN_OUT)/text/hansards.en --target $(ALIGN_OUT)/text/hansards.fr \
	  --eflomal $(ALIGN_OUT)/links/eflomal.lowercased.intersection \
	  --eflomal-label "lowercased, intersection" \
	  --gold ../shared/data/alignment/enfr.gold --gold-one-indexed \
	  --out $(ALIGN_OUT)/figures $(if $(PAIRS),--pairs $(PAIRS))

bench-scale: install    # ~1.5 h: preprocess 300k, 3M and 30M pairs, training start-up, a 1M-line translate stream
	$(RUN) benchmarks/scale.sh

bench-long: install     # ~40 min: joined test sentences (2, 3, 4 a line) per model variant and decoding
	$(RUN) benchmarks/long_inputs.sh

bench-ensembles: install  # ~25 min: two seeds trained, best vs last-5 average vs 2-seed ensemble
	$(RUN) benchmarks/ensembles.sh

bench-serve: install    # ~5 min: nmtkit serve under 1, 8, 32 clients beside translate (bench-quality's model, or MODEL=dir)
	$(RUN) benchmarks/serve.sh

bench-terms: install    # ~15 min: glossary from the test set, constrained translation, term accuracy (bench-quality's model, or MODEL=dir)
	PYTHON="$(CURDIR)/$(BIN)/python" $(RUN) benchmarks/terminology.sh

bench: bench-speed bench-quality

# Not part of `make test`: needs a CUDA torch and a GPU (docs/scale.md#gpu-check). On a fresh
# clone `make gpu-check TORCH=torch` makes the venv with PyPI's default torch, a CUDA build on
# Linux x86-64. GPU_CHECK_ARGS="--quick" for smaller sizes.
gpu-check: install      # aimed at ~6 min on one H200 (not run on a GPU yet): the docs' CUDA claims
	$(RUN) benchmarks/gpu_check.sh $(GPU_CHECK_ARGS)

clean:
	rm -rf $(VENV) demo bench-out .pytest_cache .mypy_cache .ruff_cache
