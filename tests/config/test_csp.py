"""The Content-Security-Policy: on every page, nothing from outside the site, no inline
script, no eval; inline styles only where plotly draws a chart. The templates hold no inline
script, event handler or style attribute for it to block."""

import re

import pytest

from tests.conftest import ROOT

# What a source list may hold: this site, nothing, a nonce, and data: images.
ALLOWED = {"'self'", "'none'"}


def policy(response) -> dict[str, list[str]]:
    header = response["Content-Security-Policy"]
    return {name: sources for name, *sources in
            (part.split() for part in header.split(";") if part.strip())}


def assert_nothing_from_outside(directives: dict, *, inline_styles: bool):
    assert directives["default-src"] == ["'self'"]
    assert directives["script-src"] == ["'self'"] or (
        directives["script-src"][0] == "'self'"
        and re.fullmatch(r"'nonce-[A-Za-z0-9+/=]+'", directives["script-src"][1]))
    assert directives["img-src"] == ["'self'", "data:"]
    assert directives["style-src"] == (["'self'", "'unsafe-inline'"] if inline_styles
                                       else ["'self'"])
    assert directives["object-src"] == directives["base-uri"] == ["'none'"]
    for name, sources in directives.items():
        outside = [s for s in sources if s not in ALLOWED and not s.startswith("'nonce-")
                   and (name, s) not in {("img-src", "data:"), ("style-src", "'unsafe-inline'")}]
        assert outside == [], f"{name} names {outside}"


@pytest.mark.parametrize("url, status", [
    ("/accounts/login/", 200), ("/accounts/signup/", 200), ("/api/docs/", 200),
    ("/no-such-page/", 404)])
def test_pages_without_charts_allow_nothing_inline(client, db, url, status):
    response = client.get(url)
    assert response.status_code == status
    assert_nothing_from_outside(policy(response), inline_styles=False)


TEMPLATES = sorted((ROOT / "templates").rglob("*.html"))
INLINE = [
    (re.compile(r"<script(?![^>]*\bsrc=)(?![^>]*application/json)[^>]*>"), "an inline script"),
    (re.compile(r"\son[a-z]+\s*=", re.IGNORECASE), "an event handler attribute"),
    (re.compile(r"\sstyle\s*=", re.IGNORECASE), "a style attribute"),
    (re.compile(r"<style\b", re.IGNORECASE), "a <style> element"),
    (re.compile(r"https?://(?!127\.0\.0\.1)", re.IGNORECASE), "an outside address"),
]


@pytest.mark.parametrize("template", TEMPLATES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_template_holds_what_the_policy_would_block(template):
    text = template.read_text(encoding="utf-8")
    found = [f"{what} on line {text[:m.start()].count(chr(10)) + 1}"
             for pattern, what in INLINE for m in pattern.finditer(text)]
    assert found == []


def test_the_template_check_finds_each_kind_of_inline_code(tmp_path):
    sample = ('<script>alert(1)</script>\n<a onclick="x()">\n<p style="color:red">\n'
              '<style>p{}</style>\n<img src="https://cdn.example/x.png">\n'
              '<script src="/static/js/site.js"></script>\n'
              '<script id="f" type="application/json">{}</script>')
    found = [what for pattern, what in INLINE if pattern.search(sample)]
    assert found == [what for _, what in INLINE]
    assert sum(len(p.findall(sample)) for p, _ in INLINE) == 5
