"""Lab 02's memory explorer in a real browser: JupyterLab on loopback, headless Chromium, the knobs moved.

Run with ``make test-browser`` (it installs Playwright's Python package into the read-mode venv and
skips, saying so, when Chromium is not installed). The lab runs in read mode: the explorer is pure
arithmetic on the configs, so it needs no engine, and the rest of the lab replays its recording.
The lab is opened from a copy (JupyterLab autosaves); a screenshot of each setting and the
explorer's text are written to ``build/browser/``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import urllib.request
import uuid
from pathlib import Path

import pytest

from course_utils import processes
from course_utils.loopback import free_port

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
SHOTS = REPO / "build" / "browser"
playwright = pytest.importorskip("playwright.sync_api", reason="Playwright's Python package is not installed")
pytestmark = pytest.mark.skipif(not CHROMIUM, reason="Chromium is not installed (Debian: apt install chromium)")

ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync"]


@pytest.fixture()
def lab_server(tmp_path):
    """JupyterLab on 127.0.0.1 in read mode; stopped with every kernel it started."""
    port, token = free_port(), uuid.uuid4().hex
    root = tmp_path / "root"                      # a copy: JupyterLab's autosave never touches the committed lab
    (root / "labs").mkdir(parents=True)
    shutil.copy(REPO / "labs" / "02_memory_layout.ipynb", root / "labs")
    env = {**os.environ, "COURSE_MODE": "replay", "COURSE_PROFILE": "tiny",
           "JUPYTER_CONFIG_DIR": str(tmp_path / "config"), "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"),
           "JUPYTERLAB_WORKSPACES_DIR": str(tmp_path / "workspaces")}
    log = tmp_path / "lab.log"
    with open(log, "wb") as logf:
        lab = processes.start(
            [sys.executable, "-m", "jupyter", "lab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
             f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}", "--ServerApp.port_retries=0",
             *(["--allow-root"] if os.geteuid() == 0 else [])], env=env, cwd=root, stdout=subprocess.DEVNULL,
            stderr=logf)
    url = f"http://127.0.0.1:{port}"

    def answers() -> bool:
        try:
            urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=2)
            return True
        except OSError:
            return False

    try:
        try:
            processes.wait_until(answers, 60, interval=0.5, proc=lab.proc, what="JupyterLab")
        except (TimeoutError, processes.ProcessExited) as e:
            pytest.fail(f"JupyterLab did not start ({e}):\n" + log.read_text()[-3000:])
        # Start the lab's kernel through the REST API, so that JupyterLab attaches to it instead of
        # asking which kernel to start (its "Select Kernel" dialog).
        req = urllib.request.Request(f"{url}/api/sessions?token={token}", method="POST",
                                     headers={"Content-Type": "application/json"},
                                     data=json.dumps({"path": "labs/02_memory_layout.ipynb", "type": "notebook",
                                                      "name": "02_memory_layout.ipynb",
                                                      "kernel": {"name": "python3"}}).encode())
        urllib.request.urlopen(req, timeout=60)
        yield url, token
    finally:
        lab.stop()
        assert not lab.processes(), "JupyterLab or a kernel is still running"


def _explorer_output(page):
    """The text and the picture the explorer shows below its knobs."""
    box = page.locator(".widget-vbox").filter(has=page.locator("label", has_text="max_lora_rank")).last
    area = box.locator(".widget-output")
    img = area.locator("img")
    return area.inner_text(), (img.first.get_attribute("src") if img.count() else None)


def _select(page, label: str, value: str):
    dropdown = page.locator(".widget-dropdown").filter(has=page.locator("label", has_text=label)).last
    dropdown.locator("select").select_option(label=value)


def _wait_for(page, check, what: str, timeout: float = 60):
    got = processes.wait_until(check, timeout, interval=0.25)
    return got or pytest.fail(f"the explorer never showed {what}")


def test_moving_max_lora_rank_redraws_and_says_when_it_does_not_fit(lab_server):
    url, token = lab_server
    SHOTS.mkdir(parents=True, exist_ok=True)
    with playwright.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(f"{url}/lab/tree/labs/02_memory_layout.ipynb?reset&token={token}")
            page.locator(".jp-Notebook").first.wait_for(timeout=60_000)
            page.get_by_text("| Idle").first.wait_for(timeout=120_000)        # the kernel is connected
            knob = page.locator(".widget-dropdown", has=page.locator("label", has_text="max_lora_rank")).last
            for attempt in range(3):     # a Run All sent while the kernel connection settles can be dropped
                page.locator("li.lm-MenuBar-item", has_text="Run").click()
                page.locator(".lm-Menu-itemLabel", has_text="Run All Cells").first.click()
                try:
                    knob.wait_for(timeout=60_000)
                    break
                except playwright.TimeoutError:
                    if attempt == 2:
                        raise
            knob.scroll_into_view_if_needed()

            _select(page, "max_lora_rank", "64")
            text64, img64 = _wait_for(page, lambda: (lambda t, i: (t, i) if "秩 64" in t and i else None)(
                *_explorer_output(page)), "the rank-64 layout")
            page.screenshot(path=str(SHOTS / "lab02_rank64.png"))
            assert "放不下" not in text64

            _select(page, "max_lora_rank", "256")
            text256, img256 = _wait_for(page, lambda: (lambda t, i: (t, i) if "秩 256" in t and i else None)(
                *_explorer_output(page)), "the rank-256 layout")
            page.screenshot(path=str(SHOTS / "lab02_rank256.png"))
        except Exception:
            page.screenshot(path=str(SHOTS / "lab02_failure.png"))       # what the browser showed
            raise
        finally:
            browser.close()

    def gib(text, name):
        line = next(ln for ln in text.splitlines() if ln.startswith(name))
        return float(line.split("GiB")[0].split()[-1])

    assert img256 != img64, "the figure did not change"
    assert gib(text256, "LoRA 缓冲区") == pytest.approx(4 * gib(text64, "LoRA 缓冲区"), rel=0.01)
    assert gib(text256, "KV 缓存") < gib(text64, "KV 缓存")
    assert "放不下" in text256 and "vLLM 会拒绝启动" in text256
    assert "-0." not in text256, "an over-budget setting must not show a negative KV cache"
    (SHOTS / "lab02_explorer.txt").write_text(f"max_lora_rank=64\n{text64}\n\nmax_lora_rank=256\n{text256}\n")
