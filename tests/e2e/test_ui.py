"""The memory web UI (/ui) in a real browser: headless Chromium driven through chromedriver with selenium.

A seeded cao-server is started per test; every page is opened, searched, clicked and screenshotted (PNG files in
target/e2e-ui/). A page counts as broken when it is blank, an error page or a JSON error answer. Chromium and
chromedriver come from Debian's `chromium` and `chromium-driver` packages (`.ci/run` installs them).
"""

from __future__ import annotations

import http.server
import os
import pathlib
import shutil
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from selenium import webdriver
from selenium.common.exceptions import NoAlertPresentException, StaleElementReferenceException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import WebDriverWait

from conftest import REPO, Server, Workspace, start_server
from test_auth import AUDIENCE, ISSUER, jwks_url, token  # noqa: F401 (jwks_url is a fixture)

SHOTS = REPO / "target" / "e2e-ui"
XSS = "<script>alert(1)</script><img src=x onerror=alert(2)>"
WIDE = (1280, 900)
NARROW = (390, 844)


def _browser_paths() -> tuple[str, str]:
    chrome = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    if not chrome or not driver:
        pytest.fail(
            "the UI tests need Chromium and chromedriver: `apt-get install chromium chromium-driver` "
            "(.ci/run installs them)",
            pytrace=False,
        )
    return chrome, driver


@pytest.fixture
def browser(tmp_path: pathlib.Path) -> Iterator[WebDriver]:
    chrome, driver_path = _browser_paths()
    os.environ.setdefault("SE_OFFLINE", "true")  # never let selenium-manager look for downloads
    opts = webdriver.ChromeOptions()
    opts.binary_location = chrome
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--no-first-run",
        f"--user-data-dir={tmp_path / 'chromium-profile'}",
        f"--window-size={WIDE[0]},{WIDE[1]}",
    ):
        opts.add_argument(arg)
    drv = webdriver.Chrome(service=Service(executable_path=driver_path), options=opts)
    drv.set_page_load_timeout(60)
    yield drv
    drv.quit()


def shot(drv: WebDriver, name: str) -> pathlib.Path:
    SHOTS.mkdir(parents=True, exist_ok=True)
    path = SHOTS / f"{name}.png"
    assert drv.save_screenshot(str(path)), f"screenshot {name} was not written"
    return path


def assert_no_alert(drv: WebDriver) -> None:
    try:
        text = drv.switch_to.alert.text
    except NoAlertPresentException:
        return
    pytest.fail(f"a dialog opened: {text!r}")


def assert_page(drv: WebDriver, name: str, *, heading: str | None = None) -> None:
    """The current page is a real UI page (not blank, not an error, not JSON); screenshot it."""
    assert_no_alert(drv)
    shot(drv, name)
    body = drv.find_element(By.TAG_NAME, "body").text.strip()
    assert body, f"{name}: blank page"
    assert not body.startswith("{"), f"{name}: a JSON answer instead of a page: {body[:300]}"
    errors = drv.find_elements(By.CSS_SELECTOR, "section.error")
    assert not errors, f"{name}: error page: {errors[0].text if errors else ''}"
    assert drv.find_elements(By.CSS_SELECTOR, "header.top nav a"), f"{name}: no navigation"
    if heading is not None:
        h1 = drv.find_element(By.TAG_NAME, "h1").text
        assert heading in h1, f"{name}: heading {h1!r}"


def wait_for(drv: WebDriver, css: str, timeout: float = 20) -> Any:
    return WebDriverWait(drv, timeout).until(lambda d: d.find_elements(By.CSS_SELECTOR, css))[0]


def store(server: Server, key: str, content: str, scope: str = "global", bearer: str | None = None, **ctx: str) -> dict:
    headers = {"Authorization": f"Bearer {bearer}"} if bearer else {}
    r = httpx.post(
        f"{server.url}/internal/memory/store",
        json={"key": key, "content": content, "scope": scope, "tags": "ui,e2e", "context": ctx},
        headers=headers,
        timeout=30,
    )
    assert r.status_code == 200, r.text
    return r.json()


def propose(server: Server, source: str, target: str) -> str:
    r = httpx.post(
        f"{server.url}/memory/relationships",
        json={"scope": "global", "source_key": source, "target_key": target, "type": "relates_to", "status": "proposal"},
        timeout=30,
    )
    assert r.status_code == 201, r.text
    return r.json()["id"]


def seed(server: Server, ws: Workspace) -> dict[str, str]:
    store(server, "deploy-steps", "Deploy with `make release`.\nThen tag the commit.")
    store(server, "deploy-steps", "Deploy with `make release` from a clean tree.\nThen tag the commit and push tags.")
    store(server, "test-runner", "Run the tests with cargo nextest; the e2e tests need python3.")
    store(server, "release-notes", "Release notes live in CHANGELOG.md and mention every deploy.")
    store(
        server,
        "build-notes",
        "How the build works.\n\nThe old build config lived in /nonexistent-cao-ui-e2e/build.toml, now removed.",
    )
    store(server, "xss-probe", XSS)
    store(server, "shared-tip", "A tip shared by every project: deploy on Tuesdays.", scope="federated")
    proj = store(server, "project-layout", "Sources live under crates/; deploy scripts under .ci/.", scope="project", cwd=str(ws.cwd))
    return {
        "promote": propose(server, "deploy-steps", "release-notes"),
        "reject": propose(server, "test-runner", "xss-probe"),
        "project": proj["scope_id"],
    }


@pytest.fixture
def seeded(ws: Workspace) -> Iterator[tuple[Server, dict[str, str]]]:
    srv = start_server(ws)
    ids = seed(srv, ws)
    yield srv, ids
    if srv.proc.poll() is None:
        srv.stop()


def test_every_page_search_explain_review_lint_heal_and_zoom(browser: WebDriver, seeded: Any) -> None:
    server, ids = seeded
    drv = browser

    drv.get(f"{server.url}/ui")
    assert_page(drv, "overview", heading="Containers")
    rows = {r.get_attribute("data-container") for r in drv.find_elements(By.CSS_SELECTOR, "tr[data-container]")}
    assert {"global", "federated", ids["project"]} <= rows, rows
    assert drv.find_elements(By.CSS_SELECTOR, "svg.gauge"), "the view gauge is drawn"
    # The stores-per-day sparkline: five global memories were created today (deploy-steps stored twice counts once).
    spark = drv.find_element(By.CSS_SELECTOR, "tr[data-container=global] td[data-spark]")
    assert spark.get_attribute("data-spark") == "5", spark.get_attribute("outerHTML")
    line = spark.find_element(By.CSS_SELECTOR, "svg.spark polyline")
    assert len(line.get_attribute("points").split()) == 30, "one point per day of the last 30"
    assert line.size["width"] > 0, "the sparkline is drawn"
    assert not drv.find_elements(By.CSS_SELECTOR, "a[href='/ui/learning']"), "no learning page while learning is off"

    drv.get(f"{server.url}/ui/memories")
    assert_page(drv, "browse", heading="Browse")
    keys = [a.text for a in drv.find_elements(By.CSS_SELECTOR, "a.key")]
    assert {"deploy-steps", "test-runner", "xss-probe", "shared-tip", "project-layout"} <= set(keys), keys

    # Search with explain on, through the form.
    box = drv.find_element(By.NAME, "q")
    box.clear()
    box.send_keys("deploy")
    drv.find_element(By.CSS_SELECTOR, "input[name=explain]").click()
    drv.find_element(By.CSS_SELECTOR, "form.filters button[type=submit]").click()
    wait_for(drv, "section[data-explain=report]")
    assert_page(drv, "search-explain", heading="Browse")
    explained = [r.find_element(By.CSS_SELECTOR, "td a").text for r in drv.find_elements(By.CSS_SELECTOR, "table.explain tbody tr")]
    assert "deploy-steps" in explained, explained
    found = [a.text for a in drv.find_elements(By.CSS_SELECTOR, "table.memories a.key")]
    assert "deploy-steps" in found and "test-runner" not in found, found

    # Open a memory: entries, relationships, journal history with a diff.
    drv.find_element(By.LINK_TEXT, "deploy-steps").click()
    wait_for(drv, "pre[data-content=current]")
    assert_page(drv, "memory", heading="deploy-steps")
    assert "clean tree" in drv.find_element(By.CSS_SELECTOR, "pre[data-content=current]").text
    assert drv.find_elements(By.CSS_SELECTOR, "table.relationships tr[data-status=proposal]"), "the outgoing proposal"
    versions = drv.find_elements(By.CSS_SELECTOR, "ol.history > li")
    assert len(versions) == 2, len(versions)
    versions[0].find_element(By.TAG_NAME, "summary").click()
    inserted = versions[0].find_element(By.CSS_SELECTOR, "pre.diff .ins").text
    assert "clean tree" in inserted, inserted
    shot(drv, "memory-diff")

    # The review queue: promote one proposal, reject the other.
    drv.get(f"{server.url}/ui/relationships")
    assert_page(drv, "relationships", heading="Relationships")
    drv.find_element(By.CSS_SELECTOR, f"tr[data-rel='{ids['promote']}'] button[data-action=promote]").click()
    wait_for(drv, "p[data-done=promoted]")
    assert_page(drv, "relationships-promoted")
    drv.find_element(By.CSS_SELECTOR, f"tr[data-rel='{ids['reject']}'] button[data-action=reject]").click()
    wait_for(drv, "p[data-done=rejected]")
    assert_page(drv, "relationships-rejected")
    assert not drv.find_elements(By.CSS_SELECTOR, "tr[data-rel]"), "the queue is empty"
    statuses = {
        r["id"]: r["status"]
        for status in ("active", "rejected")
        for r in httpx.get(f"{server.url}/memory/relationships", params={"status": status}, timeout=30).json()["relationships"]
    }
    assert statuses.get(ids["promote"]) == "active" and statuses.get(ids["reject"]) == "rejected", statuses

    # Lint, then the heal plan, applied with its confirmation.
    drv.get(f"{server.url}/ui/lint")
    assert_page(drv, "lint", heading="Lint")
    drv.find_element(By.CSS_SELECTOR, "button[data-action=run-lint]").click()
    wait_for(drv, "p[data-lint=summary]")
    issues = [r.text for r in drv.find_elements(By.CSS_SELECTOR, "table.findings tbody tr")]
    assert any("stale_claim" in t and "build-notes" in t for t in issues), issues
    drv.find_element(By.CSS_SELECTOR, "a[data-action=heal-plan]").click()
    wait_for(drv, "form[data-action=heal-apply]")
    assert_page(drv, "heal-plan", heading="Heal plan")
    assert "strip_paragraph" in drv.find_element(By.CSS_SELECTOR, "table.heal").text
    drv.find_element(By.CSS_SELECTOR, "form[data-action=heal-apply] input[name=confirm]").click()
    drv.find_element(By.CSS_SELECTOR, "form[data-action=heal-apply] button[type=submit]").click()
    wait_for(drv, "p[data-done=healed]")
    assert_page(drv, "heal-applied", heading="Heal applied")
    assert drv.find_elements(By.CSS_SELECTOR, "table.heal tr[data-status=applied]"), "an action was applied"
    healed = httpx.get(f"{server.url}/memory/build-notes", params={"scope": "global"}, timeout=30).json()
    assert "/nonexistent-cao-ui-e2e" not in healed["content"], healed

    # The journal: lines expand in place (zoom), down to an entry.
    drv.get(f"{server.url}/ui/journal?container=global")
    assert_page(drv, "journal", heading="Journal")
    first = drv.find_element(By.CSS_SELECTOR, "ol.journal > li > details")
    first.find_element(By.TAG_NAME, "summary").click()
    WebDriverWait(drv, 20).until(lambda d: first.get_attribute("data-loaded") == "yes")
    expanded = first.find_element(By.CSS_SELECTOR, "div.zoom")
    assert expanded.find_elements(By.CSS_SELECTOR, "div.entry, ol.journal"), expanded.get_attribute("innerHTML")
    shot(drv, "journal-zoom")
    # Without the script the same line is a link to the zoom page.
    drv.get(f"{server.url}/ui/journal/zoom?container=global&id=0&n=1")
    assert_page(drv, "zoom-page", heading="Zoom 0+1")



def test_a_heal_plan_that_changed_after_the_review_is_shown_again_not_applied(browser: WebDriver, ws: Workspace) -> None:
    """Files that appear between reading the heal plan and applying it are not deleted unseen: the apply is refused
    with the new plan, which is applied only after it is confirmed in turn."""
    server = start_server(ws)
    try:
        store(server, "keep-me", "A memory heal leaves alone.")
        wiki = ws.home / "memory" / "global" / "wiki" / "global"
        assert (wiki / "keep-me.md").exists()
        (wiki / "scribble.md").write_text("reviewed scribble\n")
        drv = browser
        drv.get(f"{server.url}/ui/heal?scope=global")
        wait_for(drv, "form[data-action=heal-apply]")
        assert "scribble" in drv.find_element(By.CSS_SELECTOR, "table.heal").text
        for i in range(3):
            (wiki / f"unreviewed-{i}.md").write_text(f"important hand note {i}\n")
        drv.find_element(By.CSS_SELECTOR, "form[data-action=heal-apply] input[name=confirm]").click()
        drv.find_element(By.CSS_SELECTOR, "form[data-action=heal-apply] button[type=submit]").click()
        changed = wait_for(drv, "p[data-plan=changed]")
        assert "changed since you reviewed it" in changed.text, changed.text
        assert not drv.find_elements(By.CSS_SELECTOR, "p[data-done=healed]")
        assert all((wiki / n).exists() for n in ("scribble.md", "unreviewed-0.md", "unreviewed-1.md", "unreviewed-2.md"))
        assert "unreviewed-0" in drv.find_element(By.CSS_SELECTOR, "table.heal").text
        assert_page(drv, "heal-plan-changed", heading="Heal plan")
        drv.find_element(By.CSS_SELECTOR, "form[data-action=heal-apply] input[name=confirm]").click()
        drv.find_element(By.CSS_SELECTOR, "form[data-action=heal-apply] button[type=submit]").click()
        wait_for(drv, "p[data-done=healed]")
        assert not any((wiki / n).exists() for n in ("scribble.md", "unreviewed-0.md"))
        assert (wiki / "keep-me.md").exists()
    finally:
        if server.proc.poll() is None:
            server.stop()

def test_a_stored_script_renders_as_text(browser: WebDriver, seeded: Any) -> None:
    server, _ = seeded
    drv = browser
    drv.get(f"{server.url}/ui/memories?q=alert")
    assert_page(drv, "xss-search", heading="Browse")
    assert "<script>alert(1)</script>" in drv.find_element(By.CSS_SELECTOR, "table.memories").text
    drv.get(f"{server.url}/ui/memory/global/xss-probe")
    time.sleep(0.5)  # give an injected handler (onerror) the chance to run, were one there
    assert_page(drv, "xss-memory", heading="xss-probe")
    assert drv.find_element(By.CSS_SELECTOR, "pre[data-content=current]").text == XSS
    assert not drv.find_elements(By.CSS_SELECTOR, "main script, main img"), "markup from the memory became elements"
    csp = httpx.get(f"{server.url}/ui/memory/global/xss-probe", timeout=30).headers["content-security-policy"]
    assert "script-src 'self'" in csp and "frame-ancestors 'none'" in csp, csp


def test_cross_origin_and_tokenless_form_posts_are_refused(browser: WebDriver, seeded: Any) -> None:
    server, _ = seeded
    target = f"{server.url}/ui/memory/global/test-runner/delete"
    page = (
        f"<!doctype html><title>elsewhere</title><form method=post action='{target}'>"
        "<input type=hidden name=csrf value=guess><button id=go type=submit>go</button></form>"
    ).encode()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(page)))
            self.end_headers()
            self.wfile.write(page)

        def log_message(self, *args: Any) -> None:
            pass

    other = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=other.serve_forever, daemon=True).start()
    try:
        drv = browser
        drv.get(f"http://127.0.0.1:{other.server_address[1]}/")
        drv.find_element(By.ID, "go").click()
        # The click navigates: the body found before the new page replaced it goes stale, so look again.
        WebDriverWait(drv, 20, ignored_exceptions=(StaleElementReferenceException,)).until(
            lambda d: "cross_origin_refused" in d.find_element(By.TAG_NAME, "body").text
        )
        shot(drv, "cross-origin-refused")
    finally:
        other.shutdown()
        other.server_close()
    still = httpx.get(f"{server.url}/memory/test-runner", params={"scope": "global"}, timeout=30)
    assert still.status_code == 200, "the cross-origin post deleted nothing"

    # Same origin but without the page's token (a request the edge alone would let through): refused too.
    r = httpx.post(target, data={"csrf": "0" * 64}, headers={"Origin": server.url}, timeout=30)
    assert r.status_code == 403 and "csrf_refused" in r.text, r.text
    assert httpx.get(f"{server.url}/memory/test-runner", params={"scope": "global"}, timeout=30).status_code == 200


def _page_token(server: Server, path: str) -> tuple[str, str]:
    """The CSRF cookie a fresh client gets with `path` of `server`: (cookie name, token)."""
    resp = httpx.get(f"{server.url}{path}", timeout=30)
    assert resp.status_code == 200, resp.text
    for name, value in resp.cookies.items():
        if name.startswith("cao_ui_csrf"):
            return name, value
    raise AssertionError(f"no CSRF cookie set by {path}: {resp.headers}")


def test_csrf_tokens_are_bound_to_the_server(browser: WebDriver, tmp_path: pathlib.Path) -> None:
    """A form token is the server's own (an HMAC under a secret of its home), not any value the cookie and the field
    agree on: a forged 64-hex pair (a cookie another local app planted for 127.0.0.1) and a token issued by another
    cao-server on 127.0.0.1 (cookies are shared across ports) are refused and change nothing, even same-origin;
    the page's own token still works, also in a browser that visited the other server's UI in between."""
    servers = []
    for name in ("a", "b"):
        w = Workspace(home=tmp_path / f"home-{name}", cwd=tmp_path / f"proj-{name}")
        w.cwd.mkdir()
        servers.append(start_server(w))
    a, b = servers
    try:
        for key in ("victim-one", "victim-two"):
            store(a, key, f"{key} must survive forged forms.")
        store(b, "other-note", "A memory of the other server.")
        cookie, own = _page_token(a, "/ui/memory/global/victim-one")
        _, foreign = _page_token(b, "/ui/memory/global/other-note")
        target = f"{a.url}/ui/memory/global/victim-one/delete"
        for what, value in [("a forged pair", "ab" * 32), ("the other server's token", foreign), ("no token", "")]:
            r = httpx.post(
                target,
                data={"csrf": value},
                headers={"Origin": a.url, "Cookie": f"{cookie}={value}"},
                timeout=30,
            )
            assert r.status_code == 403 and "csrf_refused" in r.text, (what, r.status_code, r.text[:300])
            assert httpx.get(f"{a.url}/memory/victim-one", params={"scope": "global"}, timeout=30).status_code == 200, what
        r = httpx.post(target, data={"csrf": own}, headers={"Origin": a.url, "Cookie": f"{cookie}={own}"}, timeout=30)
        assert r.status_code in (200, 303), (r.status_code, r.text[:300])
        assert httpx.get(f"{a.url}/memory/victim-one", params={"scope": "global"}, timeout=30).status_code == 404

        drv = browser
        drv.get(f"{a.url}/ui")
        drv.get(f"{b.url}/ui/memory/global/other-note")
        assert_page(drv, "csrf-other-server")
        page = f"{a.url}/ui/memory/global/victim-two"
        drv.get(page)
        assert_page(drv, "csrf-own-page", heading="victim-two")
        drv.find_element(By.CSS_SELECTOR, "form[data-action=delete] button").click()
        WebDriverWait(drv, 20, ignored_exceptions=(StaleElementReferenceException,)).until(
            lambda d: "Deleted." in d.find_element(By.TAG_NAME, "body").text
            or "csrf_refused" in d.find_element(By.TAG_NAME, "body").text
        )
        shot(drv, "csrf-own-token-accepted")
        assert "csrf_refused" not in drv.find_element(By.TAG_NAME, "body").text
        assert httpx.get(f"{a.url}/memory/victim-two", params={"scope": "global"}, timeout=30).status_code == 404
    finally:
        for srv in servers:
            srv.stop()


def test_with_auth_a_read_only_token_reads_but_cannot_delete(browser: WebDriver, ws: Workspace, jwks_url: str) -> None:  # noqa: F811
    server = start_server(ws, CAO_AUTH_JWKS=jwks_url, CAO_AUTH_AUDIENCE=AUDIENCE, CAO_AUTH_ISSUER=ISSUER)
    try:
        store(server, "guarded", "Only admins may delete this.", bearer=token("cao:write"))
        drv = browser
        drv.get(f"{server.url}/ui")
        wait_for(drv, "form[data-token-form]")
        shot(drv, "auth-sign-in")
        drv.find_element(By.CSS_SELECTOR, "form[data-token-form] input[type=password]").send_keys(token("cao:read"))
        drv.find_element(By.CSS_SELECTOR, "form[data-token-form] button").click()
        wait_for(drv, "tr[data-container]")
        assert_page(drv, "auth-overview", heading="Containers")
        assert "cao:read" in drv.find_element(By.CSS_SELECTOR, "header .who").text

        # A reload keeps the tab signed in (the token is in sessionStorage).
        drv.get(f"{server.url}/ui/memory/global/guarded")
        wait_for(drv, "pre[data-content=current]")
        assert_page(drv, "auth-memory", heading="guarded")
        drv.find_element(By.CSS_SELECTOR, "form[data-action=delete] button").click()
        wait_for(drv, "section.error")
        shot(drv, "auth-delete-refused")
        assert "cao:admin" in drv.find_element(By.CSS_SELECTOR, "section.error").text
    finally:
        still = httpx.get(
            f"{server.url}/memory/guarded",
            params={"scope": "global"},
            headers={"Authorization": f"Bearer {token('cao:read')}"},
            timeout=30,
        )
        server.stop()
    assert still.status_code == 200, "a read-only token deleted a memory"


def test_main_pages_wide_and_narrow(browser: WebDriver, seeded: Any) -> None:
    """Screenshots of the main pages at a desktop and a phone width (docs/ui/ holds a copy)."""
    server, _ = seeded
    drv = browser
    pages = {
        "containers": "/ui",
        "browse": "/ui/memories",
        "search-explain": "/ui/memories?q=deploy&explain=1&sort=relevance",
        "memory": "/ui/memory/global/deploy-steps",
        "relationships": "/ui/relationships",
        "lint": "/ui/lint",
        "journal": "/ui/journal?container=global",
    }
    for width, (w, h) in (("wide", WIDE), ("narrow", NARROW)):
        drv.set_window_size(w, h)
        for name, path in pages.items():
            drv.get(f"{server.url}{path}")
            assert_page(drv, f"{name}-{width}")


LEARNING = {"CAO_MEMORY_LEARNING_ENABLED": "true", "CAO_MEMORY_INSTRUCTION_PROMOTION_ENABLED": "true"}
PROFILE = "---\nname: worker\ndescription: Does the work\n---\n# Worker\n\nDo the work carefully.\n"
LESSON = "Quote paths with spaces in shell steps. Applies when: a step runs a shell command."


def seed_learning(server: Server) -> None:
    """Two lessons of agent `worker` (one recalled once, one never), and two outcomes with untrusted text."""
    for key, content in (("quote-paths", LESSON), ("unused-tip", f"Never recalled: {XSS} Applies when: never.")):
        r = httpx.post(
            f"{server.url}/internal/memory/store",
            json={"key": key, "content": content, "scope": "agent", "memory_type": "feedback",
                  "context": {"agent_profile": "worker"}},
            timeout=30,
        )
        assert r.status_code == 200, r.text
    r = httpx.post(
        f"{server.url}/internal/memory/recall",
        json={"query": "quote paths shell", "scope": "agent", "search_mode": "metadata",
              "context": {"agent_profile": "worker"}},
        timeout=30,
    )
    assert r.status_code == 200 and "quote-paths" in r.text, r.text
    for success, label in ((True, "release build"), (False, f"render {XSS}")):
        r = httpx.post(
            f"{server.url}/outcomes",
            json={"session_name": "s1", "task_label": label, "success": success, "score": 80 if success else 20,
                  "friction_notes": f"notes {XSS}", "agent_profile": "worker"},
            timeout=30,
        )
        assert r.status_code == 201, r.text


@pytest.fixture
def learning(ws: Workspace) -> Iterator[tuple[Server, pathlib.Path]]:
    agents = ws.home / "agent-store"
    agents.mkdir(parents=True, exist_ok=True)
    profile = agents / "worker.md"
    profile.write_text(PROFILE)
    srv = start_server(ws, **LEARNING)
    seed_learning(srv)
    yield srv, profile
    if srv.proc.poll() is None:
        srv.stop()


def test_learning_pages_and_a_confirmed_promotion(browser: WebDriver, learning: Any) -> None:
    server, profile = learning
    drv = browser
    drv.get(f"{server.url}/ui")
    drv.find_element(By.CSS_SELECTOR, "header.top nav a[href='/ui/learning']").click()
    wait_for(drv, "tr[data-agent=worker]")
    assert_page(drv, "learning", heading="Learning")
    row = drv.find_element(By.CSS_SELECTOR, "tr[data-agent=worker]").text
    assert "2" in row and "1" in row, row

    drv.get(f"{server.url}/ui/learning/worker?min_recalls=1")
    wait_for(drv, "table.lessons")
    assert_page(drv, "learning-agent", heading="worker")
    eligible = drv.find_element(By.CSS_SELECTOR, "tr[data-lesson=quote-paths]")
    assert eligible.get_attribute("data-eligible") == "yes" and "eligible" in eligible.text, eligible.text
    assert eligible.find_elements(By.CSS_SELECTOR, "svg.bar.met rect.fill"), "the access-count bar"
    refused = drv.find_element(By.CSS_SELECTOR, "tr[data-lesson=unused-tip]")
    assert refused.get_attribute("data-eligible") == "no" and "recalled 0 times" in refused.text, refused.text
    assert "<script>alert(1)</script>" in refused.text, "lesson text shown as text"
    outcomes = drv.find_element(By.CSS_SELECTOR, "table.outcomes").text
    assert f"render {XSS}" in outcomes and "release build" in outcomes, outcomes
    assert not drv.find_elements(By.CSS_SELECTOR, "main script, main img"), "markup from outcomes became elements"

    drv.find_element(By.CSS_SELECTOR, "a[data-action=promotion-plan]").click()
    wait_for(drv, "form[data-action=promote-apply]")
    assert_page(drv, "learning-plan", heading="Promotion plan")
    added = drv.find_element(By.CSS_SELECTOR, "pre.diff").text
    assert LESSON in added, added
    assert drv.find_elements(By.CSS_SELECTOR, "tr[data-change=add][data-key=quote-paths]")
    assert profile.read_text() == PROFILE, "a plan writes nothing"
    # The browser refuses to submit before the confirmation is ticked (required), and the server refuses too.
    r = httpx.post(f"{server.url}/ui/learning/worker/promote", data={"min_recalls": "1"},
                   headers={"Origin": server.url}, timeout=30)
    assert r.status_code == 403 and "csrf_refused" in r.text, r.text
    drv.find_element(By.CSS_SELECTOR, "form[data-action=promote-apply] input[name=confirm]").click()
    drv.find_element(By.CSS_SELECTOR, "form[data-action=promote-apply] button[type=submit]").click()
    wait_for(drv, "p[data-done=promoted-lessons]")
    assert_page(drv, "learning-promoted", heading="Promotion applied")
    written = profile.read_text()
    assert LESSON in written and "quote-paths" in written and "unused-tip" not in written, written

    # Planning again proposes nothing.
    drv.get(f"{server.url}/ui/learning/worker/promote?min_recalls=1")
    wait_for(drv, "p[data-plan=nothing]")
    assert_page(drv, "learning-plan-again", heading="Promotion plan")


def test_learning_pages_wide_and_narrow(browser: WebDriver, learning: Any) -> None:
    """Screenshots of the learning pages at a desktop and a phone width (docs/ui/ holds a copy)."""
    server, _ = learning
    drv = browser
    pages = {
        "learning": "/ui/learning",
        "learning-agent": "/ui/learning/worker?min_recalls=1",
        "learning-plan": "/ui/learning/worker/promote?min_recalls=1",
    }
    for width, (w, h) in (("wide", WIDE), ("narrow", NARROW)):
        drv.set_window_size(w, h)
        for name, path in pages.items():
            drv.get(f"{server.url}{path}")
            assert_page(drv, f"{name}-{width}")
