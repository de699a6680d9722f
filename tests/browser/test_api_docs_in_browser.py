"""/api/docs/ in Chromium at 1366 and 390 px: Swagger UI renders from the site's own files, and
the site's style of `code` (a light background) does not reach inside it, where Swagger UI
writes light text on its dark example blocks. Screenshots: artifacts/screenshots/api-docs-*.png."""

import pytest

from tests.browser.conftest import SCREENSHOTS

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True),
              pytest.mark.timeout(120)]
WIDTHS = {"desktop": (1366, 900), "phone": (390, 844)}
SITE_CODE_BACKGROUND = "rgb(238, 241, 246)"  # static/css/site.css: code


@pytest.mark.parametrize("device", WIDTHS)
def test_swagger_ui_keeps_its_own_code_colours(browser, live_server, device):
    width, height = WIDTHS[device]
    context = browser.new_context(base_url=live_server.url,
                                  viewport={"width": width, "height": height})
    try:
        page = context.new_page()
        outside = []
        page.on("request", lambda r: outside.append(r.url)
                if not r.url.startswith(live_server.url) and not r.url.startswith("data:")
                else None)
        assert page.goto("/api/docs/").status == 200
        page.locator(".opblock-summary").first.click()
        page.locator(".opblock-body").first.wait_for()
        codes = page.evaluate("""() => [...document.querySelectorAll("#swagger-ui code")]
            .filter(c => c.textContent.trim())
            .map(c => { const s = getComputedStyle(c);
                        return [s.color, s.backgroundColor, c.textContent.slice(0, 30)]; })""")
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENSHOTS / f"api-docs-{width}.png"))
    finally:
        context.close()
    assert codes, "Swagger UI rendered no code"
    assert [c for c in codes if c[1] == SITE_CODE_BACKGROUND] == []
    assert outside == []
