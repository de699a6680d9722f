"""Rendered pages read as HTML, not as text: the element a check means, found by a CSS
selector, and its text or attributes; a fragment compared as HTML by Django's assertInHTML.

Selectors are a small CSS subset: a tag, `#id`, `.class`, `[attr]`, `[attr=value]`,
`[attr^=value]`, `[attr*=value]` (values quoted or bare), and compounds of them joined by a
space (a descendant) or `>` (a child); several joined by `,`.
"""

import itertools
import re
from html.parser import HTMLParser

from django.test import SimpleTestCase

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
        "track", "wbr"}
# A start tag that ends the open element, as browsers read HTML whose end tags are left out.
ENDS = {"li": {"li"}, "option": {"option"}, "dt": {"dt", "dd"}, "dd": {"dt", "dd"},
        "tr": {"tr", "td", "th"}, "td": {"td", "th"}, "th": {"td", "th"},
        "thead": {"tbody"}, "tbody": {"thead", "tbody"}}
BLOCKS = {"address", "article", "aside", "blockquote", "details", "div", "dl", "fieldset",
          "figure", "footer", "form", "h1", "h2", "h3", "h4", "h5", "h6", "header", "hr",
          "main", "nav", "ol", "p", "pre", "section", "table", "ul"}


class Element:
    """An element of a parsed page: its tag, attributes, children (elements and strings)."""

    def __init__(self, tag: str, attrs: dict, parent: "Element | None" = None):
        self.tag, self.attrs, self.parent, self.children = tag, attrs, parent, []

    def __repr__(self) -> str:
        attrs = "".join(f' {k}="{v}"' if v is not None else f" {k}"
                        for k, v in self.attrs.items())
        return f"<{self.tag}{attrs}>{self.text[:80]}"

    def __eq__(self, other) -> bool:
        """The same element: tag, attributes and children alike, text to the character."""
        return isinstance(other, Element) and (self.tag, self.attrs, self.children) == \
            (other.tag, other.attrs, other.children)

    __hash__ = None

    @property
    def text(self) -> str:
        """The text inside, whitespace collapsed as a browser shows it."""
        return " ".join(self.raw_text.split())

    @property
    def raw_text(self) -> str:
        """The text inside as written (a script's JSON, a <pre>)."""
        return "".join(self._strings())

    @property
    def all_text(self) -> str:
        """Its text and every attribute value inside it: what a check that a name appears
        nowhere in an element reads."""
        values = [v for e in [self, *self.elements()] for v in e.attrs.values() if v]
        return " ".join([self.text, *values])

    def _strings(self):
        for child in self.children:
            if isinstance(child, str):
                yield child
            else:
                yield from child._strings()

    def get(self, name: str, default=None):
        return self.attrs.get(name, default)

    @property
    def tail(self) -> str:
        """The text right after this element, up to its parent's next element."""
        siblings = self.parent.children
        after = siblings[next(i for i, c in enumerate(siblings) if c is self) + 1:]
        return "".join(itertools.takewhile(lambda c: isinstance(c, str), after))

    @property
    def classes(self) -> set[str]:
        return set((self.attrs.get("class") or "").split())

    def elements(self):
        """Every element below this one, in document order."""
        for child in self.children:
            if isinstance(child, Element):
                yield child
                yield from child.elements()

    def select(self, selector: str) -> list["Element"]:
        """The elements below this one that `selector` matches, in document order."""
        each = [_steps(part) for part in _SEPARATE.findall(selector) if part.strip()]
        return [e for e in self.elements() if any(_matches(e, steps, self) for steps in each)]

    def one(self, selector: str) -> "Element":
        found = self.select(selector)
        assert len(found) == 1, f"{len(found)} elements match {selector!r}: {found}"
        return found[0]


class _Builder(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.root = self.current = Element("#document", {})

    def handle_starttag(self, tag, attrs):
        ends = ENDS.get(tag, set()) | ({"p"} if tag in BLOCKS else set())
        while self.current.tag in ends:
            self.current = self.current.parent
        element = Element(tag, dict(attrs), self.current)
        self.current.children.append(element)
        if tag not in VOID:
            self.current = element

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        if tag not in VOID:
            self.current = self.current.parent

    def handle_endtag(self, tag):
        open_element = self.current
        while open_element is not self.root and open_element.tag != tag:
            open_element = open_element.parent
        if open_element is not self.root:  # an end tag with no open element is ignored
            self.current = open_element.parent

    def handle_data(self, data):
        self.current.children.append(data)


def parse(page) -> Element:
    """The document of `page`: a response, bytes or a string of HTML (an element as it is)."""
    if isinstance(page, Element):
        return page
    builder = _Builder()
    builder.feed(_html(page))
    builder.close()
    return builder.root


def _html(page) -> str:
    if getattr(page, "streaming", False):
        page = b"".join(page.streaming_content)
    elif hasattr(page, "content"):
        page = page.content
    return page.decode() if isinstance(page, bytes) else page


def select(page, selector: str) -> list[Element]:
    """The elements of `page` that `selector` matches, in document order."""
    return parse(page).select(selector)


def one(page, selector: str) -> Element:
    """The one element of `page` that `selector` matches (fails on none or several)."""
    return parse(page).one(selector)


def texts(page, selector: str) -> list[str]:
    """The text of each element `selector` matches."""
    return [e.text for e in select(page, selector)]


def assert_in_html(needle: str, haystack, count: int | None = None) -> None:
    """`needle`, a fragment of HTML, is in `haystack` as HTML (attributes in any order, class
    names as a set, whitespace collapsed): Django's assertInHTML."""
    SimpleTestCase().assertInHTML(needle, _html(haystack), count=count)


# Each selector of a list: up to a comma outside quotes.
_SEPARATE = re.compile(r"""(?:"[^"]*"|'[^']*'|[^,"'])+""")
_COMPOUND = re.compile(r"""
    (?P<tag>[a-zA-Z][\w-]*|\*)?
    (?P<rest>(?:\#[\w-]+|\.[\w-]+|\[(?:"[^"]*"|'[^']*'|[^\]"'])+\])*)
""", re.X)
_PART = re.compile(r"""\#(?P<id>[\w-]+)|\.(?P<cls>[\w-]+)
    |\[\s*(?P<attr>[\w:-]+)\s*(?:(?P<op>[\^*~]?=)\s*(?P<value>"[^"]*"|'[^']*'|[^\]\s]*))?\s*\]""",
                   re.X)


def _steps(selector: str) -> list[tuple[str, dict]]:
    """[(combinator, compound)]: the combinator before each compound (' ' or '>')."""
    steps, combinator, rest = [], " ", selector.strip()
    while rest:
        if rest[0] == ">":
            combinator, rest = ">", rest[1:].lstrip()
            continue
        match = _COMPOUND.match(rest)
        if not match or not match.group(0):
            raise ValueError(f"cannot read the selector {selector!r} at {rest!r}")
        tag, checks = match.group("tag"), []
        for part in _PART.finditer(match.group("rest")):
            if part.group("id"):
                checks.append(("id", "=", part.group("id")))
            elif part.group("cls"):
                checks.append(("class", "~=", part.group("cls")))
            else:
                value = part.group("value")
                if value and value[0] in "\"'":
                    value = value[1:-1]
                checks.append((part.group("attr"), part.group("op"), value))
        steps.append((combinator, (tag if tag != "*" else None, checks)))
        combinator, rest = " ", rest[match.end():]
        if rest[:1].isspace():
            rest = rest.lstrip()
    return steps


def _compound_matches(element: Element, compound) -> bool:
    tag, checks = compound
    if tag and element.tag != tag.lower():
        return False
    for name, op, value in checks:
        if name not in element.attrs:
            return False
        have = element.attrs[name] or ""
        if op == "=" and have != value or op == "~=" and value not in have.split() \
                or op == "^=" and not have.startswith(value) \
                or op == "*=" and value not in have:
            return False
    return True


def _matches(element: Element, steps, scope: Element) -> bool:
    """Whether `element` is matched by the last step, its ancestors (below `scope`) by the
    ones before, each by its combinator."""
    (combinator, compound), before = steps[-1], steps[:-1]
    if not _compound_matches(element, compound):
        return False
    if not before:
        return True
    parent = element.parent
    if combinator == ">":
        return parent is not None and parent is not scope and _matches(parent, before, scope)
    while parent is not None and parent is not scope:
        if _matches(parent, before, scope):
            return True
        parent = parent.parent
    return False
