"""Record live results; replay them in read mode (one layer for every lab).

Read the package top to bottom in this order::

    live, make record                                   read mode (no vLLM, no GPU)
    ─────────────────                                   ───────────────────────────
    a lab cell calls                                    the same cell calls
      llm.generate(prompts, sp, lora_request=[...])       llm.generate(prompts, sp, lora_request=[...])
            │  vllm_calls.instrument() wrapped it               │  standins/vllm is first on sys.path:
            ▼                                                   ▼  standin.LLM.generate
    record.recorded(key=keys.generate(...))             record.recorded(key=keys.generate(...))
            │  the key: kind + the arguments that               │  the same key, built from the same
            │  decide the answer (keys.py), paths made          │  arguments
            │  portable (portable.py)                           │
            ▼                                                   ▼
    session.Session.run: runs the real call,            session.Session.run: finds the entry with
    writes {key, cell, args, result} to                 that key (and cell, and how many times the
    data/recordings/<profile>/<lab>.json                cell asked), returns its result, or raises
            │                                           the recorded exception again; never guesses
            ▼                                                   ▼
    the real RequestOutputs                             standin.RequestOutput built from the result

- :mod:`.keys`: every key, built in one place; :mod:`.portable`: paths and ports made machine-independent.
- :mod:`.record`: :func:`~.record.recorded`, the one decorator every recorded call goes through (the vLLM
  calls, a server's start, a curl command, a load test, a source lookup, a scheduler trace, a timing, a
  measurement, a ``replayable`` lab helper).
- :mod:`.session`: the recording of one lab in one kernel: the file, the running cell (from IPython's
  ``pre_run_cell`` event), HTTP cassettes per cell (vcrpy) for the HTTP a cell makes itself (the openai
  client, ``requests``), and what to undo when another lab opens or the kernel exits.
- :mod:`.vllm_calls`: the live side: wraps the real vLLM while recording (undone when the session closes).
- :mod:`.standin` and ``standins/vllm``: read mode's ``vllm`` package; facts of the recorded vLLM (its
  version, ``SamplingParams`` and ``LoRAConfig`` defaults) are read when used, from the open session.
- :mod:`.stale`: which recordings no longer match the code (``make test-stale``).
"""
