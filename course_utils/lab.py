"""Opening a lab: ``course_utils.start("01_offline_multi_lora")``, the first line of every lab.

It picks the profile and the mode (:mod:`.mode`), opens the lab's record/replay session
(:mod:`.replay.session`), and prints the banner (:mod:`.banner`). ``COURSE_RECORD=1`` records a live run
for read mode (``make record``).
"""

from __future__ import annotations

import os

from . import banner as _banner
from .loopback import bypass_proxy
from .mode import detect_mode, use_replay_vllm
from .profiles import Profile, apply_env, get_profile
from .quiet import quiet_libraries
from .replay import session


def start(lab: str, profile: str | None = None, quiet: bool = False, cpu_only: str | None = None) -> Profile:
    """Open the lab's session (profile, mode, recording) and print the banner. Returns the profile.

    A profile that cannot run the lab live opens the tiny world's recording in read mode, says why, and
    returns the tiny profile: a profile without the course's four adapters (llama3b: the seed's one SQL
    adapter), or a GPU profile for a lab that runs on CPU only (``cpu_only``: the reason, e.g. Lab 07).
    Under ``make record`` such a lab records nothing (the record loop then skips it). Read mode on a profile
    without a recording of this lab opens the tiny recording the same way.

    Running it again for the same lab in the same kernel keeps the session it opened (and what it has
    recorded); opening another lab closes the first lab's session and undoes what it patched.

    Live on a profile with a card (hardware "cuda": one engine per card), every later ``LLM(...)`` in the kernel
    first shuts down the engine an earlier one built here (:func:`.engine.one_per_card.one_engine_per_card`), so that a
    re-run engine cell does not meet its own old engine on the card.
    """
    prof = get_profile(profile)
    mode = detect_mode()
    notice = _banner.cannot_run_live(prof, lab, cpu_only)
    if notice and os.environ.get("COURSE_RECORD") == "1":
        notice += f"（make record：{lab} 在配置 {prof.name!r} 上不现场运行，所以这里没有要录的。）\n"
    if notice is None and mode == "replay":
        notice = _banner.no_recording_notice(prof, lab)
    if notice:
        if not quiet:
            print(notice)
        prof, mode = get_profile("tiny"), "replay"
    if mode == "live":
        prof.require_runnable()
        apply_env(prof)
        bypass_proxy()                          # a proxy in the shell that started JupyterLab: not for 127.0.0.1
        quiet_libraries()
        from .gpu.free import ensure_room_for   # another kernel's engine still on the card? say so before vLLM fails

        ensure_room_for(prof, what=f"本实验（{prof.name} 配置）")
        if prof.hardware == "cuda":     # one engine per card: a re-run LLM(...) cell first releases the old engine
            from .engine.one_per_card import one_engine_per_card

            one_engine_per_card(prof)
    recording = os.environ.get("COURSE_RECORD") == "1"
    current = session.active()
    if current is None or not current.same_lab(lab, prof.name, mode, recording):
        current = session.set_current(session.Session(lab, prof.name, mode, recording=recording))
        if mode == "replay":
            use_replay_vllm()
        elif current.recording:
            from .replay import vllm_calls

            current.on_close(vllm_calls.instrument())
            vllm_calls.record_facts(current)
    if not quiet:
        print(_banner.banner(prof, current))
    return prof
