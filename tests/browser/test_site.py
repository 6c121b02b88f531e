"""The course site in a real browser: every page of ``build/site/`` opened in headless Chromium.

Run with ``make test-site`` (it runs ``make site`` first and skips this part, saying so, when Chromium
is not installed). The site is served from 127.0.0.1; any request for another host is refused and
reported (a page that needs a CDN is broken offline). On every page: no same-site request fails, every
image loads, every internal link points to a page that exists and, with ``#...``, to an id on it.
The Chinese text must be drawn with a font that covers Chinese (fontconfig's ``:lang=zh`` list; Debian:
fonts-noto-cjk), asked of Chromium itself (the DevTools protocol's platform fonts for a node).
Screenshots of every page go to ``build/browser/site/``.
"""

from __future__ import annotations

import functools
import http.server
import json
import os
import re
import shutil
import subprocess
import threading
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit

import pytest

REPO = Path(__file__).resolve().parents[2]
SITE = REPO / "build" / "site"
SHOTS = REPO / "build" / "browser" / "site"
CHROMIUM = os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
playwright = pytest.importorskip("playwright.sync_api", reason="Playwright's Python package is not installed")
pytestmark = pytest.mark.skipif(not CHROMIUM, reason="Chromium is not installed (Debian: apt install chromium)")

ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync"]
LABS = sorted(p.stem for p in (REPO / "labs").glob("[0-9]*.ipynb"))
EXPECTED = ["index.html", "labs/glossary.html", "autodl.html", *(f"labs/{lab}.html" for lab in LABS)]


def pages() -> list[str]:
    """Every HTML page of the site (the theme's template fragments under _static/ are not pages)."""
    return sorted(str(p.relative_to(SITE)) for p in SITE.rglob("*.html") if "_static" not in p.parts)


@functools.cache
def ids_of(page: str) -> set[str]:
    return set(re.findall(r'\bid="([^"]+)"', (SITE / page).read_text(encoding="utf-8")))


def cjk_families() -> set[str]:
    """Font families that cover Chinese, as fontconfig (which Chromium uses on Linux) lists them."""
    try:
        out = subprocess.run(["fc-list", ":lang=zh", "family"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return set()
    return {name.strip() for line in out.splitlines() for name in line.split(",") if name.strip()}


@pytest.fixture(scope="module")
def site_url():
    if not (SITE / "index.html").is_file():
        pytest.fail("build/site/ has no index.html: run `make site` first (make test-site does)")
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    handler = functools.partial(Quiet, directory=str(SITE))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


@pytest.fixture(scope="module")
def browser():
    with playwright.sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            yield b
        finally:
            b.close()


def test_the_site_has_every_page():
    missing = [p for p in EXPECTED if not (SITE / p).is_file()]
    assert not missing, f"make site did not write {missing}"
    for lab in LABS:       # each lab links its notebook, copied unchanged into the site
        assert (SITE / "notebooks" / f"{lab}.ipynb").read_bytes() == (REPO / "labs" / f"{lab}.ipynb").read_bytes()


def check_page(page, base: str, path: str) -> list[str]:
    """Open one page; return what is wrong with it."""
    problems, outside = [], []

    def route(r):
        if urlsplit(r.request.url).hostname == "127.0.0.1" or r.request.url.startswith("data:"):
            r.continue_()
        else:
            outside.append(r.request.url)
            r.abort()

    failed = []
    page.route("**/*", route)
    page.on("response", lambda resp: resp.status >= 400 and failed.append(f"{resp.status} {resp.url}"))
    page.on("requestfailed", lambda req: urlsplit(req.url).hostname == "127.0.0.1"
            and failed.append(f"{req.failure} {req.url}"))
    # make test runs this beside test-rehearsal's engines: a page of this local site has taken over Playwright's
    # default 30 s to settle there (the fresh clone of 4f100af), so the wait is long; a slow page is not a failure
    page.goto(base + path, wait_until="load", timeout=120_000)
    page.wait_for_load_state("networkidle", timeout=120_000)
    problems += [f"{path}: a request failed: {f}" for f in failed]
    problems += [f"{path}: asks for a resource outside the site: {u}" for u in outside]
    broken = page.eval_on_selector_all("img", "els => els.filter(e => !(e.complete && e.naturalWidth > 0))"
                                               ".map(e => e.getAttribute('src'))")
    problems += [f"{path}: image does not load: {src}" for src in broken]
    for href in page.eval_on_selector_all("a[href]", "els => els.map(e => e.getAttribute('href'))"):
        url = urlsplit(urljoin(base + path, href))
        if url.scheme not in ("http", "https") or url.hostname != "127.0.0.1":
            continue                                   # external links (the glossary's reading list) are not ours
        target = unquote(url.path.lstrip("/")) or "index.html"
        if target.endswith("/"):
            target += "index.html"
        if not (SITE / target).is_file():
            problems.append(f"{path}: link to a missing page: {href}")
        elif url.fragment and target.endswith(".html") and unquote(url.fragment) not in ids_of(target):
            problems.append(f"{path}: link to a missing anchor: {href}")
    return problems


def test_every_page_opens_with_its_links_images_and_no_outside_request(site_url, browser):
    SHOTS.mkdir(parents=True, exist_ok=True)
    all_pages = pages()
    assert set(EXPECTED) <= set(all_pages)
    problems = []
    for path in all_pages:
        page = browser.new_page(viewport={"width": 1300, "height": 1600})
        try:
            problems += check_page(page, site_url, path)
            page.screenshot(path=str(SHOTS / (path.replace("/", "_").removesuffix(".html") + ".png")))
        finally:
            page.close()
    assert not problems, "\n".join(problems)


def test_each_lab_page_shows_its_provenance_once_and_its_outputs(site_url, browser):
    page = browser.new_page()
    try:
        for lab in LABS:
            recorded = json.loads((REPO / "data" / "recordings" / "tiny" / f"{lab}.json").read_text())["provenance"]
            page.goto(f"{site_url}labs/{lab}.html")
            notes = page.locator(".course-provenance")
            assert notes.count() == 1, f"{lab}: {notes.count()} provenance notes"
            text = notes.inner_text()
            for field in ("profile", "hardware", "vllm_version", "date"):
                assert recorded[field] in text, f"{lab}: the provenance note lacks {field} {recorded[field]!r}"
            assert page.locator(".cell_output").count() > 0, f"{lab}: no recorded output shows"
        page.goto(f"{site_url}labs/02_memory_layout.html")
        explorer = page.locator(".cell", has_text="figures.explorer()")
        assert explorer.locator("img").count() >= 1, "Lab 02's explorer lost its static figure"
        assert "需要运行中的内核" in explorer.inner_text() or "没有运行中的内核" in explorer.inner_text()
        assert "显存总量" in explorer.inner_text(), "Lab 02's explorer lost its static table"
    finally:
        page.close()


def test_the_chinese_text_is_drawn_with_a_cjk_font(site_url, browser):
    cjk = cjk_families()
    assert cjk, "fontconfig lists no font that covers Chinese: install one (Debian: apt install fonts-noto-cjk)"
    page = browser.new_page()
    try:
        cdp = page.context.new_cdp_session(page)
        for path in ("index.html", "labs/01_offline_multi_lora.html"):
            page.goto(site_url + path)
            cdp.send("DOM.enable")
            cdp.send("CSS.enable")
            root = cdp.send("DOM.getDocument")["root"]["nodeId"]
            for selector in ("article h1", "article p"):     # the theme keeps a hidden copy of the title outside <article>
                node = cdp.send("DOM.querySelector", {"nodeId": root, "selector": selector})["nodeId"]
                assert node, f"{path}: no {selector}"
                fonts = cdp.send("CSS.getPlatformFontsForNode", {"nodeId": node})["fonts"]
                used = {f["familyName"]: f["glyphCount"] for f in fonts if f["glyphCount"] > 0}
                text = page.locator(selector).first.inner_text()
                assert re.search(r"[\u4e00-\u9fff]", text), f"{path}: {selector} has no Chinese text: {text[:60]!r}"
                assert any(name in cjk for name in used), (
                    f"{path}: {selector}'s text is drawn with {used}, none of which covers Chinese "
                    f"(fontconfig's :lang=zh fonts: {sorted(cjk)[:5]}...)")
    finally:
        page.close()


def test_the_search_box_finds_chinese_words(site_url, browser):
    """Sphinx indexes Chinese words only with jieba (the `site` extra): without it, searching 显存 finds nothing."""
    page = browser.new_page()
    try:
        page.goto(f"{site_url}search.html?q=显存")
        hits = page.locator("#search-results ul.search li")
        hits.first.wait_for(timeout=15_000)
        assert hits.count() >= 3, f"searching 显存 found {hits.count()} pages"
        assert any("02_memory_layout" in (a or "") for a in
                   page.eval_on_selector_all("#search-results a", "els => els.map(e => e.getAttribute('href'))"))
    finally:
        page.close()
