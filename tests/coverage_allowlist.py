"""Functions of the course's own code that no suite of ``make coverage-gpu`` executes (fully), and why.

Keys are ``path::qualified function name`` (``<module>`` for module level), as ``tests/coverage_gpu.py`` prints
them. Reasons say which hardware, target or gap stands in the way: "GPU:" and "AutoDL:" need the student's
machine; "separate target/suite" names the command that runs it; "not measured" is code that runs in a suite
but in a process whose coverage data is lost; "CPU branch" is an edge or error path no measured process took.

Measured with ``make coverage-gpu`` on 2026-12-03, first at aad9a12 (the first run that measures the lab kernels:
tests/coverage_kernel_startup.py saves after every cell, since nbval kills kernels with SIGKILL; and Lab 07's Ray
driver, which saves before os._exit), again at e8cef8d after issue 29: 6595 of 7426 lines executed, 232 functions
with a line no suite ran, each below. Ray Serve's replica processes are still not measured (Ray kills them)."""

ALLOWED: dict[str, str] = {
    'course_utils/adapters.py::AdapterInfo.scaling':
        "CPU branch no measured process took (1 lines; first: 'return self.alpha / self.rank'): an edge or error path a unit test could take",
    'course_utils/adapters.py::_check_fits_base':
        "CPU branch no measured process took (3 lines; first: 'except ConfigError as e:'): an edge or error path a unit test could take",
    'course_utils/adapters.py::_lora_modules':
        'CPU branch no measured process took (1 lines; first: \'raise AdapterError(f"adapter {name!r}: {tname} in {weights} has shape {tensors[tname][\\\'sha\'): an edge or error path a unit test could take',
    'course_utils/adapters.py::_read_adapter':
        'CPU branch no measured process took (5 lines; first: \'if (path / "adapter_model.bin").is_file():\'): an edge or error path a unit test could take',
    'course_utils/adapters.py::_read_config':
        'CPU branch no measured process took (2 lines; first: \'raise AdapterError(f"adapter {name!r}: {cfg_file} holds a JSON {type(cfg).__name__}, not a\'): an edge or error path a unit test could take',
    'course_utils/adapters.py::_safetensors_header':
        'CPU branch no measured process took (2 lines; first: \'raise AdapterError(f"{path} is not a safetensors file (too short); re-save or re-download \'): an edge or error path a unit test could take',
    'course_utils/adapters.py::_storage':
        "CPU branch no measured process took (2 lines; first: 'except (OSError, ValueError):'): an edge or error path a unit test could take",
    'course_utils/adapters.py::read_safetensors_header':
        "CPU branch no measured process took (2 lines; first: 'except (ValueError, KeyError, TypeError, AttributeError) as e:'): an edge or error path a unit test could take",
    'course_utils/adapters.py::targets_module':
        "CPU branch no measured process took (1 lines; first: 'return False'): an edge or error path a unit test could take",
    'course_tools/budget.py::<module>':
        "separate command: python -m course_tools.budget prints the README's budget tables",
    'course_tools/budget.py::lab_work':
        "CPU branch no measured process took (1 lines; first: 'return work'): an edge or error path a unit test could take",
    'course_utils/chat.py::template_of':
        'CPU branch no measured process took (1 lines; first: \'raise FileNotFoundError(f"no chat template in {folder} (chat_template.jinja or tokenizer_c\'): an edge or error path a unit test could take',
    'course_tools/bench/engine.py::<module>':
        'separate target: make bench (tokens/s, base vs mixed adapters); not in make test',
    'course_tools/bench/engine.py::main':
        'separate target: make bench (tokens/s, base vs mixed adapters); not in make test',
    'course_tools/bench/engine.py::run_benchmark':
        'separate target: make bench (tokens/s, base vs mixed adapters); not in make test',
    'course_tools/bench/engine.py::run_benchmark.measure':
        'separate target: make bench (tokens/s, base vs mixed adapters); not in make test',
    'course_tools/bench/engine.py::run_benchmark.start':
        'separate target: make bench (tokens/s, base vs mixed adapters); not in make test',
    'course_utils/engine/loadbench.py::<module>':
        'separate target: make bench-lora-load writes data/recordings/cpu/lora_load.json; not in make test',
    'course_tools/bench/loadbench.py::adapters_for':
        'separate target: make bench-lora-load writes data/recordings/cpu/lora_load.json; not in make test',
    'course_tools/bench/loadbench.py::main.measure':
        'separate target: make bench-lora-load writes data/recordings/cpu/lora_load.json; not in make test',
    'course_tools/bench/loadbench.py::run':
        'separate target: make bench-lora-load writes data/recordings/cpu/lora_load.json; not in make test',
    'course_tools/bench/loadbench.py::time_add_lora':
        'separate target: make bench-lora-load writes data/recordings/cpu/lora_load.json; not in make test',
    'course_tools/bench/loadbench.py::time_load_endpoint':
        'separate target: make bench-lora-load writes data/recordings/cpu/lora_load.json; not in make test',
    'course_utils/engine/opbench.py::<module>':
        'separate target: make bench-lora-ops writes the recording Lab 03 shows; not in make test',
    'course_tools/bench/opbench.py::_ints':
        'separate target: make bench-lora-ops writes the recording Lab 03 shows; not in make test',
    'course_utils/engine/opbench.py::_span':
        'CPU branch no measured process took (1 lines; first: \'return "无数据"\'): an edge or error path a unit test could take',
    'course_utils/engine/opbench.py::load_run':
        'CPU branch no measured process took (1 lines; first: \'raise OpBenchError(f"没有录制好的{what} {Path(path).name}；用 `make {make_target}` 生成它。")\'): an edge or error path a unit test could take',
    'course_utils/engine/opbench.py::plot':
        'separate target: make bench-lora-ops writes the recording Lab 03 shows; not in make test',
    'course_tools/bench/opbench.py::provenance':
        'separate target: make bench-lora-ops writes the recording Lab 03 shows; not in make test',
    'course_tools/bench/opbench.py::save':
        'separate target: make bench-lora-ops writes the recording Lab 03 shows; not in make test',
    'course_utils/engine/opsweep.py::sweep':
        'separate target: make bench-lora-ops writes the recording Lab 03 shows; not in make test',
    'course_utils/engine/opbench.py::verdicts':
        "CPU branch no measured process took (1 lines; first: 'continue'): an edge or error path a unit test could take",
    'course_utils/engine/schedtrace.py::drive':
        "CPU branch no measured process took (1 lines; first: 'continue'): an edge or error path a unit test could take",
    'course_utils/engine/schedtrace.py::gantt':
        "CPU branch no measured process took (2 lines; first: 'continue'): an edge or error path a unit test could take",
    'course_utils/engine/source.py::Located.__str__':
        'CPU branch no measured process took (1 lines; first: \'return self.header() + ("\\\\n" + self.source if self.found else "")\'): an edge or error path a unit test could take',
    'course_utils/engine/source.py::Located._repr_markdown_':
        "CPU branch no measured process took (1 lines; first: 'return self.markdown()'): an edge or error path a unit test could take",
    'course_utils/engine/source.py::Located.header':
        'CPU branch no measured process took (3 lines; first: \'if self.status == "found":\'): an edge or error path a unit test could take',
    'course_utils/engine/source.py::Located.markdown':
        'CPU branch no measured process took (2 lines; first: \'head += f"；{self.note}"\'): an edge or error path a unit test could take',
    'course_utils/engine/vllm_source.py::_attribute_docs':
        "CPU branch no measured process took (2 lines; first: 'except (OSError, TypeError):'): an edge or error path a unit test could take",
    'course_utils/engine/vllm_source.py::_class_parts':
        "CPU branch no measured process took (1 lines; first: 'continue'): an edge or error path a unit test could take",
    'course_utils/engine/vllm_source.py::_locate_in_file':
        "CPU branch no measured process took (2 lines; first: 'except Exception: # noqa: BLE001'): an edge or error path a unit test could take",
    'course_utils/engine/vllm_source.py::_plain':
        "CPU branch no measured process took (1 lines; first: 'return repr(v)'): an edge or error path a unit test could take",
    'course_utils/engine/vllm_source.py::_related':
        "CPU branch no measured process took (2 lines; first: 'except AttributeError:'): an edge or error path a unit test could take",
    'course_utils/engine/vllm_source.py::_relative_file':
        'CPU branch no measured process took (1 lines; first: \'return ""\'): an edge or error path a unit test could take',
    'course_utils/engine/vllm_source.py::_resolve':
        "CPU branch no measured process took (1 lines; first: 'obj = obj.__func__'): an edge or error path a unit test could take",
    'course_utils/engine/vllm_source.py::dataclass_fields':
        'CPU branch no measured process took (1 lines; first: \'default = "（必填）"\'): an edge or error path a unit test could take',
    'course_utils/engine/vllm_source.py::locate':
        "CPU branch no measured process took (4 lines; first: 'except Exception: # noqa: BLE001'): an edge or error path a unit test could take",
    'course_utils/engine/widebench.py::<module>':
        'separate target: make bench-lora-e2e writes data/recordings/cpu/lora_e2e.json; not in make test',
    'course_tools/bench/widebench.py::build_wide':
        'separate target: make bench-lora-e2e writes data/recordings/cpu/lora_e2e.json; not in make test',
    'course_tools/bench/widebench.py::main.measure':
        'separate target: make bench-lora-e2e writes data/recordings/cpu/lora_e2e.json; not in make test',
    'course_tools/bench/widebench.py::run':
        'separate target: make bench-lora-e2e writes data/recordings/cpu/lora_e2e.json; not in make test',
    'course_tools/bench/widebench.py::run.setting':
        'separate target: make bench-lora-e2e writes data/recordings/cpu/lora_e2e.json; not in make test',
    'course_tools/gpu/checks.py::gpu_verdict':
        "CPU branch no measured process took (2 lines; first: 'except ValueError as e:'): an edge or error path a unit test could take",
    'course_tools/gpu/checks.py::main':
        "CPU branch no measured process took (2 lines; first: 'except ValueError as e:'): an edge or error path a unit test could take",
    'course_tools/gpu/checks.py::parse_df':
        'CPU branch no measured process took (1 lines; first: \'raise ValueError(f"unexpected df line: {rows[-1]!r}")\'): an edge or error path a unit test could take',
    'course_tools/gpu/checks.py::parse_smi_csv':
        'CPU branch no measured process took (2 lines; first: \'raise ValueError(f"unexpected memory.total {mem!r} in {line!r}")\'): an edge or error path a unit test could take',
    'course_tools/gpu/download.py::_adapter_files':
        'AutoDL: downloads from ModelScope/Hugging Face mirrors, unreachable here; the plan, checks and file checks are unit-tested in test_autodl.py',
    'course_tools/gpu/download.py::_model_files':
        'AutoDL: downloads from ModelScope/Hugging Face mirrors, unreachable here; the plan, checks and file checks are unit-tested in test_autodl.py',
    'course_tools/gpu/download.py::download_hf':
        'AutoDL: downloads from ModelScope/Hugging Face mirrors, unreachable here; the plan, checks and file checks are unit-tested in test_autodl.py',
    'course_tools/gpu/download.py::download_modelscope':
        'AutoDL: downloads from ModelScope/Hugging Face mirrors, unreachable here; the plan, checks and file checks are unit-tested in test_autodl.py',
    'course_tools/gpu/download.py::fetch':
        'AutoDL: downloads from ModelScope/Hugging Face mirrors, unreachable here; the plan, checks and file checks are unit-tested in test_autodl.py',
    'course_tools/gpu/download.py::main':
        'AutoDL: downloads from ModelScope/Hugging Face mirrors, unreachable here; the plan, checks and file checks are unit-tested in test_autodl.py',
    'course_tools/gpu/download.py::plan_items':
        'AutoDL: downloads from ModelScope/Hugging Face mirrors, unreachable here; the plan, checks and file checks are unit-tested in test_autodl.py',
    'course_tools/gpu/download.py::rerun_command':
        'AutoDL: downloads from ModelScope/Hugging Face mirrors, unreachable here; the plan, checks and file checks are unit-tested in test_autodl.py',
    'course_tools/gpu/download.py::search_roots':
        'AutoDL: downloads from ModelScope/Hugging Face mirrors, unreachable here; the plan, checks and file checks are unit-tested in test_autodl.py',
    'course_tools/gpu/train_adapters.py::adapter_dirs':
        'GPU: trains the 7B adapters with CUDA on AutoDL (autodl/setup.sh); the plan and manifest parts are unit-tested',
    'course_tools/gpu/train_adapters.py::check_gpu':
        'GPU: trains the 7B adapters with CUDA on AutoDL (autodl/setup.sh); the plan and manifest parts are unit-tested',
    'course_tools/gpu/train_adapters.py::clean_partials':
        'GPU: trains the 7B adapters with CUDA on AutoDL (autodl/setup.sh); the plan and manifest parts are unit-tested',
    'course_tools/gpu/train_adapters.py::install_adapter':
        'GPU: trains the 7B adapters with CUDA on AutoDL (autodl/setup.sh); the plan and manifest parts are unit-tested',
    'course_tools/gpu/train_adapters.py::main':
        'GPU: trains the 7B adapters with CUDA on AutoDL (autodl/setup.sh); the plan and manifest parts are unit-tested',
    'course_tools/gpu/train_adapters.py::train_all':
        'GPU: trains the 7B adapters with CUDA on AutoDL (autodl/setup.sh); the plan and manifest parts are unit-tested',
    'course_tools/gpu/train_adapters.py::train_config':
        'GPU: trains the 7B adapters with CUDA on AutoDL (autodl/setup.sh); the plan and manifest parts are unit-tested',
    'course_tools/gpu/train_adapters.py::training_base':
        'GPU: trains the 7B adapters with CUDA on AutoDL (autodl/setup.sh); the plan and manifest parts are unit-tested',
    'course_tools/gpu/train_adapters.py::write_manifest':
        'GPU: trains the 7B adapters with CUDA on AutoDL (autodl/setup.sh); the plan and manifest parts are unit-tested',
    'course_tools/grading.py::<module>':
        'separate target: make nbgrader-course and the grading CLI; test-nbgrader calls the functions directly',
    'course_tools/grading.py::_load_solutions':
        'separate target: make nbgrader-course and the grading CLI; test-nbgrader calls the functions directly',
    'course_tools/grading.py::course':
        'separate target: make nbgrader-course and the grading CLI; test-nbgrader calls the functions directly',
    'course_tools/grading.py::exercises':
        'CPU branch no measured process took (2 lines; first: \'raise ValueError(f"cell {i} is tagged exercise-check but does not call cu.exercises.check(\'): an edge or error path a unit test could take',
    'course_tools/grading.py::main':
        'separate target: make nbgrader-course and the grading CLI; test-nbgrader calls the functions directly',
    'course_tools/grading.py::source_version':
        'CPU branch no measured process took (1 lines; first: \'raise KeyError(f"no reference answer for exercise {ex[\\\'name\\\']!r}")\'): an edge or error path a unit test could take',
    'course_tools/grading.py::tag':
        'CPU branch no measured process took (1 lines; first: \'meta["nbgrader"], changed = want, True\'): an edge or error path a unit test could take',
    'course_utils/replay/record.py::_key_value':
        "CPU branch no measured process took (1 lines; first: 'return [_key_value(v) for v in value]'): an edge or error path a unit test could take",
    'course_utils/replay/record.py::_source_digest':
        "CPU branch no measured process took (2 lines; first: 'except (OSError, TypeError): # defined where no source is kept (e.g. a plain `python -c`)'): an edge or error path a unit test could take",
    'course_utils/mode.py::use_replay_vllm':
        'CPU branch no measured process took (1 lines; first: \'raise ProfileError("这个内核里已经 import 了真正的 vLLM；要换成读模式（COURSE_MODE=replay），\'): an edge or error path a unit test could take',
    'course_utils/timing.py::timer.__exit__':
        "CPU branch no measured process took (1 lines; first: 'return False'): an edge or error path a unit test could take",
    'course_tools/labtime.py::<module>':
        'separate target: make bench-labs (wall time of every lab); not in make test',
    'course_tools/labtime.py::main':
        'separate target: make bench-labs (wall time of every lab); not in make test',
    'course_tools/labtime.py::run_once':
        'separate target: make bench-labs (wall time of every lab); not in make test',
    'course_utils/memory/figures.py::explorer.redraw':
        "separate suite: make test-browser moves the knob in Chromium (not in make coverage-gpu's suites)",
    'course_utils/memory/inside_engine.py::punica_bytes_of':
        'CPU branch no measured process took (1 lines; first: \'raise MemoryModelError("引擎的模型没有 lora_manager，也就没有 Punica wrapper：要测 LoRA 元数据，\'): an edge or error path a unit test could take',
    'course_utils/memory/inside_engine.py::weight_bytes_of':
        "exported for students; no lab or test calls it (Lab 02 compares vLLM's own weight figure)",
    'course_utils/memory/inside_engine.py::engine_model':
        'CPU branch no measured process took (1 lines; first: \'raise MemoryModelError("在 model_executor.driver_worker.worker.model_runner.model 处找不到模型；\'): an edge or error path a unit test could take',
    'course_utils/memory/measure.py::measure_weight_bytes':
        "exported for students; no lab or test calls it (Lab 02 compares vLLM's own weight figure)",
    'course_utils/memory/model.py::KVCache.max_concurrency':
        "CPU branch no measured process took (1 lines; first: 'return self.num_blocks / self.blocks_per_seq'): an edge or error path a unit test could take",
    'course_utils/memory/model.py::Layout.used_before_kv':
        "CPU branch no measured process took (1 lines; first: 'return self.weights + self.lora_buffers + self.punica + self.activation + self.non_torch +'): an edge or error path a unit test could take",
    'course_utils/memory/model.py::_adapter_entries':
        "CPU branch no measured process took (4 lines; first: 'elif isinstance(ad, dict):'): an edge or error path a unit test could take",
    'course_utils/memory/model.py::_awq_settings':
        'CPU branch no measured process took (3 lines; first: \'raise MemoryModelError(f"quantization {q.get(\\\'quant_method\\\')!r} in the config is not model\'): an edge or error path a unit test could take',
    'course_utils/memory/model.py::awq_linear_bytes':
        'CPU branch no measured process took (2 lines; first: \'raise MemoryModelError(f"AWQ with {bits} bits: vLLM supports 4-bit AWQ only.")\'): an edge or error path a unit test could take',
    'course_utils/memory/model.py::plan':
        'CPU branch no measured process took (2 lines; first: \'raise MemoryModelError(f"max_loras={max_loras}: vLLM needs max_loras >= 1.")\'): an edge or error path a unit test could take',
    'course_utils/memory/model.py::verify_adapter_size':
        "CPU branch no measured process took (5 lines; first: 'base = info.base_model_name'): an edge or error path a unit test could take",
    'course_utils/paths.py::find_repo':
        'CPU branch no measured process took (8 lines; first: \'env = os.environ.get("COURSE_REPO")\'): an edge or error path a unit test could take',
    'course_utils/paths.py::models_dir':
        'AutoDL: /root/autodl-tmp exists only on an AutoDL instance (test_autodl.py sets the folder)',
    'course_utils/paths.py::read_paths_file':
        "CPU branch no measured process took (3 lines; first: 'except ValueError as e:'): an edge or error path a unit test could take",
    'course_utils/paths.py::require_checkout':
        "CPU branch no measured process took (1 lines; first: 'raise CheckoutError('): an edge or error path a unit test could take",
    'course_utils/processes.py::_cmdline_of':
        "CPU branch no measured process took (2 lines; first: 'except psutil.Error:'): an edge or error path a unit test could take",
    'course_utils/processes.py::_die_with_parent':
        'runs in the child between fork and exec (preexec_fn), where no coverage tracer runs; tests/test_processes.py checks its effect',
    'course_utils/processes.py::_never':
        "CPU branch no measured process took (2 lines; first: 'except psutil.Error:'): an edge or error path a unit test could take",
    'course_utils/processes.py::_running':
        "CPU branch no measured process took (4 lines; first: 'except psutil.NoSuchProcess:'): an edge or error path a unit test could take",
    'course_utils/processes.py::_signal':
        "CPU branch no measured process took (2 lines; first: 'except psutil.Error:'): an edge or error path a unit test could take",
    'course_utils/processes.py::alive':
        "CPU branch no measured process took (2 lines; first: 'except psutil.AccessDenied:'): an edge or error path a unit test could take",
    'course_utils/processes.py::find':
        "CPU branch no measured process took (6 lines; first: 'except psutil.Error:'): an edge or error path a unit test could take",
    'course_utils/processes.py::sockets':
        "CPU branch no measured process took (2 lines; first: 'except psutil.Error:'): an edge or error path a unit test could take",
    'course_utils/profiles.py::Profile.adapter':
        "CPU branch no measured process took (1 lines; first: 'raise ProfileError('): an edge or error path a unit test could take",
    'course_utils/profiles.py::cuda_available':
        'GPU: torch.cuda.is_available() with a CUDA build of torch; the /dev/nvidia0 and nvidia-smi sides are unit-tested',
    'course_utils/replay/keys.py::prompts':
        "CPU branch no measured process took (1 lines; first: 'return dict(p)'): an edge or error path a unit test could take",
    'course_utils/replay/keys.py::sampling':
        "CPU branch no measured process took (1 lines; first: 'return [sampling(s) for s in sp]'): an edge or error path a unit test could take",
    'course_utils/replay/portable.py::portable':
        "CPU branch no measured process took (1 lines; first: 'return portable(str(obj))'): an edge or error path a unit test could take",
    'course_utils/replay/session.py::Session.__init__':
        'CPU branch no measured process took (2 lines; first: \'raise ValueError(f"mode must be \\\'live\\\' or \\\'replay\\\', not {mode!r}")\'): an edge or error path a unit test could take',
    'course_utils/replay/session.py::Session.fact':
        'CPU branch no measured process took (1 lines; first: \'raise ReplayMiss(f"read mode: the fact {name!r} was not recorded in {_shown(self.path)}; "\'): an edge or error path a unit test could take',
    'course_utils/replay/session.py::close_cassettes':
        "CPU branch no measured process took (1 lines; first: 's.leave_cell()'): an edge or error path a unit test could take",
    'course_utils/replay/session.py::current':
        'CPU branch no measured process took (1 lines; first: \'raise RuntimeError("no lab session: call course_utils.start(\\\'<lab name>\\\') first")\'): an edge or error path a unit test could take',
    'course_utils/replay/session.py::hardware_description':
        'GPU: names the CUDA device when torch.cuda.is_available() (from nvidia-smi, free.describe_gpu, so CUDA stays uninitialised; unit-tested with the stand-in nvidia-smi in tests/test_gpu_free.py)',
    'course_utils/replay/session.py::installed_vllm_version':
        "CPU branch no measured process took (1 lines; first: 'return None'): an edge or error path a unit test could take",
    'course_tools/stale.py::main':
        'CPU branch no measured process took (3 lines; first: \'print(profile, " ".join(current))\'): an edge or error path a unit test could take',
    'course_tools/stale.py::other_profile_report':
        'CPU branch no measured process took (1 lines; first: \'failures.append(f"{_shown(copy)}: {state} for the stamped recording of {profile!r} "\'): an edge or error path a unit test could take',
    'course_tools/stale.py::problems':
        'CPU branch no measured process took (2 lines; first: \'return [f"{notebook}: no recording {_shown(rec)}; {fix}"]\'): an edge or error path a unit test could take',
    'course_tools/stale.py::recorded_copies':
        "CPU branch no measured process took (1 lines; first: 'continue'): an edge or error path a unit test could take",
    'course_utils/replay/standin.py::LLM.__init__':
        'CPU branch no measured process took (1 lines; first: \'kwargs = {"model": args[0], **kwargs}\'): an edge or error path a unit test could take',
    'course_utils/replay/standin.py::SamplingParams.__init__':
        'CPU branch no measured process took (1 lines; first: \'raise TypeError(f"read mode records only these SamplingParams fields: {\\\', \\\'.join(keys.SAMP\'): an edge or error path a unit test could take',
    'course_utils/replay/standin.py::SamplingParams.__repr__':
        'CPU branch no measured process took (1 lines; first: \'return "SamplingParams(" + ", ".join(f"{f}={getattr(self, f)!r}" for f in keys.SAMPLING_FI\'): an edge or error path a unit test could take',
    'course_tools/report.py::<module>':
        'separate target: make run prints where the executed labs are; not in make test',
    'course_tools/report.py::main':
        'separate target: make run prints where the executed labs are; not in make test',
    'course_utils/scale/bench.py::<module>':
        'separate target: make bench-scale writes data/recordings/cpu/scale_sweep.json; not in make test',
    'course_tools/bench/scale.py::main':
        'separate target: make bench-scale writes data/recordings/cpu/scale_sweep.json; not in make test',
    'course_tools/bench/scale.py::sweep':
        'separate target: make bench-scale writes data/recordings/cpu/scale_sweep.json; not in make test',
    'course_utils/scale/control.py::_ask':
        'not measured: Lab 07 runs it live in test-live, in a process whose coverage data is lost (nbval kills its kernels with SIGKILL, the Ray driver leaves by os._exit, Ray kills its workers); CPU code, not GPU; test_scale.py covers the parts it can without Ray',
    'course_utils/scale/control.py::_stop':
        'not measured: Lab 07 runs it live in test-live, in a process whose coverage data is lost (nbval kills its kernels with SIGKILL, the Ray driver leaves by os._exit, Ray kills its workers); CPU code, not GPU; test_scale.py covers the parts it can without Ray',
    'course_utils/scale/control.py::down':
        'not measured: Lab 07 runs it live in test-live, in a process whose coverage data is lost (nbval kills its kernels with SIGKILL, the Ray driver leaves by os._exit, Ray kills its workers); CPU code, not GPU; test_scale.py covers the parts it can without Ray',
    'course_utils/scale/control.py::up':
        'not measured: Lab 07 runs it live in test-live, in a process whose coverage data is lost (nbval kills its kernels with SIGKILL, the Ray driver leaves by os._exit, Ray kills its workers); CPU code, not GPU; test_scale.py covers the parts it can without Ray',
    'course_utils/scale/driver.py::main':
        'not measured: Lab 07 runs it live in test-live, in a process whose coverage data is lost (nbval kills its kernels with SIGKILL, the Ray driver leaves by os._exit, Ray kills its workers); CPU code, not GPU; test_scale.py covers the parts it can without Ray',
    'course_utils/scale/driver.py::stop':
        'not measured: Lab 07 runs it live in test-live, in a process whose coverage data is lost (nbval kills its kernels with SIGKILL, the Ray driver leaves by os._exit, Ray kills its workers); CPU code, not GPU; test_scale.py covers the parts it can without Ray',
    'course_utils/scale/routers.py::CourseRouter.choose_replicas':
        "not measured: Lab 07 runs it live in test-live, in a process whose coverage data is lost (nbval kills its kernels with SIGKILL, the Ray driver leaves by os._exit, Ray kills its workers); CPU code, not GPU; test_scale.py covers the parts it can without Ray (it runs in Ray Serve's replicas only)",
    'course_utils/scale/routers.py::CourseRouter.initialize_state':
        "not measured: Lab 07 runs it live in test-live, in a process whose coverage data is lost (nbval kills its kernels with SIGKILL, the Ray driver leaves by os._exit, Ray kills its workers); CPU code, not GPU; test_scale.py covers the parts it can without Ray (it runs in Ray Serve's replicas only)",
    'course_utils/scale/sockets.py::survivors':
        'not measured: Lab 07 runs it live in test-live, in a process whose coverage data is lost (nbval kills its kernels with SIGKILL, the Ray driver leaves by os._exit, Ray kills its workers); CPU code, not GPU; test_scale.py covers the parts it can without Ray',
    'course_utils/scale/store.py::S3Store.start':
        'not measured: Lab 07 runs it live in test-live, in a process whose coverage data is lost (nbval kills its kernels with SIGKILL, the Ray driver leaves by os._exit, Ray kills its workers); CPU code, not GPU; test_scale.py covers the parts it can without Ray',
    'course_utils/scale/store.py::S3Store.stop':
        'not measured: Lab 07 runs it live in test-live, in a process whose coverage data is lost (nbval kills its kernels with SIGKILL, the Ray driver leaves by os._exit, Ray kills its workers); CPU code, not GPU; test_scale.py covers the parts it can without Ray',
    'course_utils/recorded_figures.py::lab03_figures':
        "CPU branch no measured process took (2 lines; first: 'except Exception: # noqa: BLE001 - the question then says the recording is missing'): an edge or error path a unit test could take",
    'course_utils/recorded_figures.py::lab05_figures':
        "CPU branch no measured process took (1 lines; first: 'continue'): an edge or error path a unit test could take",
    'course_utils/recorded_figures.py::load':
        'CPU branch no measured process took (1 lines; first: \'raise RecordingError(f"the self-test quotes {path.relative_to(REPO)}, which does not exist\'): an edge or error path a unit test could take',
    'course_utils/server/command.py::cli_works':
        "CPU branch no measured process took (2 lines; first: 'return False'): an edge or error path a unit test could take",
    'course_utils/server/command.py::lora_module_arg':
        'CPU branch no measured process took (1 lines; first: \'return f"{spec[0]}={spec[1]}"\'): an edge or error path a unit test could take',
    'course_utils/server/diagnose.py::diagnose':
        'CPU branch no measured process took (1 lines; first: \'return f"the server exited with code {returncode}; see the log lines above."\'): an edge or error path a unit test could take',
    'course_utils/server/diagnose.py::log_tail':
        'CPU branch no measured process took (1 lines; first: \'return ""\'): an edge or error path a unit test could take',
    'course_utils/server/http.py::RequestsTransport.close':
        "CPU branch no measured process took (1 lines; first: 'self._session.close()'): an edge or error path a unit test could take",
    'course_utils/server/http.py::shell':
        'CPU branch no measured process took (1 lines; first: \'raise RuntimeError(f"exit {out.returncode}: {out.stderr.strip()}")\'): an edge or error path a unit test could take',
    'course_utils/server/loadgen.py::burst.sample':
        'CPU branch no measured process took: a /metrics read that fails during Lab 04\'s burst (the sample is skipped); added by reading issue 29\'s change, after the measured run',
    'course_utils/server/load.py::_loopback_only':
        'CPU branch no measured process took (1 lines; first: \'raise ValueError(f"{what} only targets a server on loopback")\'): an edge or error path a unit test could take',
    'course_utils/server/loadgen.py::run_load':
        "CPU branch no measured process took (1 lines; first: 'done.set()'): an edge or error path a unit test could take",
    'course_utils/server/loadgen.py::run_load.worker':
        "CPU branch no measured process took (2 lines; first: 'except requests.RequestException as e:'): an edge or error path a unit test could take",
    'course_utils/server/load.py::percentile':
        "CPU branch no measured process took (1 lines; first: 'return None'): an edge or error path a unit test could take",
    'course_utils/server/process.py::Server.log_tail':
        "CPU branch no measured process took (1 lines; first: 'return log_tail(self.log_path, n)'): an edge or error path a unit test could take",
    'course_utils/processes.py::_in_jupyter_kernel':
        "CPU branch no measured process took (2 lines; first: 'except Exception:'): an edge or error path a unit test could take",
    'course_utils/processes.py::_install_hooks':
        "CPU branch no measured process took (2 lines; first: 'return'): an edge or error path a unit test could take",
    'course_utils/processes.py::_on_signal':
        'edge: a SIGTERM/SIGINT to a kernel holding a server, with no earlier handler; the server tests stop processes by tag instead',
    'course_utils/processes.py::cleanup_stale':
        "CPU branch no measured process took (5 lines; first: 'except (OSError, ValueError, KeyError, TypeError):'): an edge or error path a unit test could take",
    'course_utils/loopback.py::port_free':
        "CPU branch no measured process took (1 lines; first: 'return True'): an edge or error path a unit test could take",
    'course_utils/processes.py::runtime_dir':
        'CPU branch no measured process took (1 lines; first: \'d = Path(os.environ["XDG_RUNTIME_DIR"]) / "multi-lora-course"\'): an edge or error path a unit test could take',
    'course_utils/tinyworld/checkers.py::Verdict.__bool__':
        "CPU branch no measured process took (1 lines; first: 'return self.right'): an edge or error path a unit test could take",
    'course_utils/tinyworld/checkers.py::_medical_expected':
        "CPU branch no measured process took (2 lines; first: 'except KeyError:'): an edge or error path a unit test could take",
    'course_utils/tinyworld/checkers.py::check_medical':
        "CPU branch no measured process took (1 lines; first: 'continue'): an edge or error path a unit test could take",
    'course_tools/tinyworld/demo.py::<module>':
        'separate target: make demo (one heterogeneous batch); not in make test',
    'course_tools/tinyworld/demo.py::main':
        'separate target: make demo (one heterogeneous batch); not in make test',
    'course_tools/tinyworld/experiment.py::main':
        'separate command: python -m course_tools.tinyworld.experiment (hours of training; EXPERIMENTS.md section 7); tests/test_trainer.py runs experiment.run on a few steps',
    'course_tools/tinyworld/experiment.py::parse_value':
        'separate command: python -m course_tools.tinyworld.experiment parses its --set values (tests/test_trainer.py calls experiment.run directly)',
    'course_tools/tinyworld/quality.py::<module>':
        'separate target: make eval prints the held-out quality table; the quality gate in test-unit calls the rest',
    'course_tools/tinyworld/quality.py::base_copy':
        'separate target: make eval prints the held-out quality table; the quality gate in test-unit calls the rest',
    'course_tools/tinyworld/quality.py::main':
        'separate target: make eval prints the held-out quality table; the quality gate in test-unit calls the rest',
    'course_tools/tinyworld/quality.py::wrong_examples':
        'separate target: make eval prints the held-out quality table; the quality gate in test-unit calls the rest',
    'course_utils/tinyworld/tasks.py::pool':
        'CPU branch no measured process took (1 lines; first: \'raise ValueError(f"split must be \\\'train\\\' or \\\'heldout\\\', not {split!r}")\'): an edge or error path a unit test could take',
    'course_tools/tinyworld/trainer.py::<module>':
        "separate target: make tiny-world (full training; test-unit's smoke run trains a small subset with other settings)",
    'course_tools/tinyworld/trainer.py::_train':
        "separate target: make tiny-world (full training; test-unit's smoke run trains a small subset with other settings)",
    'course_tools/tinyworld/trainer.py::batches':
        'CPU branch no measured process took (1 lines; first: \'raise ValueError(f"{len(encoded)} examples cannot fill a batch of {batch_size}")\'): an edge or error path a unit test could take',
    'course_tools/tinyworld/trainer.py::encode_pairs':
        "separate target: make tiny-world (full training; test-unit's smoke run trains a small subset with other settings)",
    'course_tools/tinyworld/trainer.py::main':
        "separate target: make tiny-world (full training; test-unit's smoke run trains a small subset with other settings)",
    'course_tools/tinyworld/trainer.py::train_adapter':
        "separate target: make tiny-world (full training; test-unit's smoke run trains a small subset with other settings)",
    'course_tools/tinyworld/trainer.py::update':
        "separate target: make tiny-world (full training; test-unit's smoke run trains a small subset with other settings)",
    'course_tools/vllm_api/__main__.py::<module>':
        "separate suite: make check-vllm-api runs it (make test does), outside make coverage-gpu's suites",
    'course_tools/vllm_api/cli.py::<module>':
        "separate suite: make check-vllm-api (in make test, not in make coverage-gpu's suites) downloads and unpacks the wheel",
    'course_tools/vllm_api/cli.py::installed_root':
        "separate suite: make check-vllm-api (in make test, not in make coverage-gpu's suites) downloads and unpacks the wheel",
    'course_tools/vllm_api/cli.py::wheel_source':
        "separate suite: make check-vllm-api (in make test, not in make coverage-gpu's suites) downloads and unpacks the wheel",
    'course_tools/vllm_api/course.py::Collector.visit_Call':
        "CPU branch no measured process took (3 lines; first: 'for s in _strs(kw.value):'): an edge or error path a unit test could take",
    'course_tools/vllm_api/course.py::collect':
        "CPU branch no measured process took (2 lines; first: 'except Exception: # noqa: BLE001 - a profile that cannot be built here names no settings'): an edge or error path a unit test could take",
    'course_tools/vllm_api/tree.py::Tree.__init__':
        'CPU branch no measured process took (1 lines; first: \'raise FileNotFoundError(f"no vllm/__init__.py under {self.root}")\'): an edge or error path a unit test could take',
    'course_tools/vllm_api/tree.py::Tree._annotation':
        "CPU branch no measured process took (2 lines; first: 'return mod, value.func'): an edge or error path a unit test could take",
    'course_tools/vllm_api/tree.py::Tree._class_of':
        "CPU branch no measured process took (1 lines; first: 'return None'): an edge or error path a unit test could take",
    'course_tools/vllm_api/tree.py::Tree._top':
        'CPU branch no measured process took (1 lines; first: \'return module, None # module __getattr__: if name == "current_platform"\'): an edge or error path a unit test could take',
    'course_tools/vllm_api/tree.py::Tree.chain_problem':
        'CPU branch no measured process took (2 lines; first: \'return "" # of something outside vLLM\'): an edge or error path a unit test could take',
    'course_tools/vllm_api/tree.py::Tree.has':
        "CPU branch no measured process took (2 lines; first: 'return False'): an edge or error path a unit test could take",
    'course_tools/vllm_api/tree.py::Tree.params':
        "CPU branch no measured process took (1 lines; first: 'return set()'): an edge or error path a unit test could take",
    'course_tools/vllm_api/tree.py::_element':
        "CPU branch no measured process took (1 lines; first: 'return None'): an edge or error path a unit test could take",
    'course_tools/vllm_api/tree.py::_unwrap':
        "CPU branch no measured process took (2 lines; first: 'members = expr.slice.elts if isinstance(expr.slice, ast.Tuple) else [expr.slice]'): an edge or error path a unit test could take",
    'course_utils/vllm_patches.py::skip_rows_without_adapter.patched':
        'separate target: make bench-lora-e2e times the LoRA ops (the timing side of the patch)',
    'course_utils/vllm_patches.py::enabled':
        'accessor for benchmarks (make bench-lora-e2e); the patch itself runs in every live suite',
    'course_utils/vllm_patches.py::grouped':
        'accessor for benchmarks (make bench-lora-e2e); the patch itself runs in every live suite',
    'course_utils/vllm_patches.py::install':
        "CPU branch no measured process took (2 lines; first: 'return True'): an edge or error path a unit test could take",
    'course_utils/vllm_patches.py::op_seconds':
        'separate target: make bench-lora-e2e times the LoRA ops with it',
    'course_utils/scale/site/sitecustomize.py::_LoopbackReplicaGrpc.find_spec':
        "not measured: runs inside Ray Serve's replica processes (Lab 07, test-live), which Ray kills, so their coverage data is lost; the driver's side is measured",
    'course_utils/scale/site/sitecustomize.py::_LoopbackReplicaGrpc.find_spec.exec_module.add_port_loopback':
        "not measured: runs inside Ray Serve's replica processes (Lab 07, test-live), which Ray kills, so their coverage data is lost; the driver's side is measured",
}
