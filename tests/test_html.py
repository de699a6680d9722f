"""tests/html.py, the pages' reader: selectors, text as shown, end tags left out."""

import pytest

from tests.html import assert_in_html, one, parse, select, texts

PAGE = """<!doctype html><html><body>
<nav class="top bar"><a href="/b/mmae/" class="brand">Board</a></nav>
<table id="board"><tr class="row"><td class="num rank">1<td class="name"><b>Alpha</b> &amp; co
<tr class="row"><td class="num rank">2<td class="name">Beta</table>
<ul><li>one<li>two <em>and</em>   a half</ul>
<p>first<div id="after">block</div>
<input name="q" value="x" disabled><br>
<select><option value="">all<option value="topic" selected>topic</select>
</body></html>"""


def test_an_element_is_found_by_tag_id_class_and_attribute():
    assert one(PAGE, "#board").tag == "table"
    assert one(PAGE, "a.brand[href='/b/mmae/']").text == "Board"
    assert one(PAGE, "nav.top.bar > a").get("href") == "/b/mmae/"
    assert one(PAGE, "[href^='/b/']").text == "Board" and select(PAGE, "[href*=mmae]")
    assert one(PAGE, "input[disabled]").get("value") == "x"
    assert select(PAGE, "a.missing") == [] and select(PAGE, "nav > b") == []


def test_end_tags_left_out_end_where_a_browser_ends_them():
    assert texts(PAGE, "#board tr.row > td.rank") == ["1", "2"]
    assert texts(PAGE, "td.name") == ["Alpha & co", "Beta"]
    assert texts(PAGE, "li") == ["one", "two and a half"]
    assert one(PAGE, "p").text == "first" and one(PAGE, "body > #after").text == "block"
    assert one(PAGE, "option[selected]").get("value") == "topic"


def test_several_selectors_and_scoped_searches():
    rows = select(PAGE, "tr")
    assert [r.one("b").text for r in rows[:1]] == ["Alpha"]
    assert len(select(PAGE, "td.rank, td.name")) == 4
    assert rows[1].select("b") == []


def test_one_fails_on_none_and_on_several():
    with pytest.raises(AssertionError, match="0 elements match"):
        one(PAGE, "h1")
    with pytest.raises(AssertionError, match="2 elements match"):
        one(PAGE, "tr")


def test_a_fragment_is_compared_as_html():
    assert_in_html('<a class="brand" href="/b/mmae/">Board</a>', PAGE)
    with pytest.raises(AssertionError):
        assert_in_html('<a class="brand" href="/b/other/">Board</a>', PAGE)
    assert parse(PAGE).one("#board") is not None


def test_a_quoted_value_may_hold_commas_and_brackets():
    page = '<a href="/compare/?models=1,2">pair</a><a href="/x?q=[a]">list</a>'
    assert texts(page, 'a[href="/compare/?models=1,2"]') == ["pair"]
    assert texts(page, "a[href='/x?q=[a]'], a[href*=','] ") == ["pair", "list"]


def test_the_text_after_an_element_and_elements_compared_whole():
    page = parse('<p><b>Alpha</b> ahead by <i>2</i>.</p><p><b>Alpha</b> ahead by <i>2</i>.</p>')
    first, second = page.select("p")
    assert first.one("b").tail == " ahead by " and first.one("i").tail == "."
    assert first == second and first != parse("<p><b>Alpha</b> ahead by <i>3</i>.</p>").one("p")
