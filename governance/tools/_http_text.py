"""The readable text of an HTML page: scripts, styles and comments dropped, blocks on lines.

A single forward pass of its own, not `html.parser`: the standard parser is super-linear on
adversarial markup (`<a ` repeated: 36 s for 48 KB) and raises on some (`<![<![`). Here every
search starts where the previous one stopped and either moves the position past what it found
or ends the scan (markup left open runs to the end of the page and is dropped, as HTML5 does),
so the characters examined stay a small multiple of the page's length; `Scan.examined` counts
them and a test pins the bound on adversarial pages.
"""

from __future__ import annotations

import html
import re

_SKIPPED = frozenset({"script", "style", "noscript", "template"})
_RAW_TEXT = frozenset({"script", "style"})  # content is not markup: it ends at `</script`
_BLOCKS = frozenset(
    {"p", "div", "br", "li", "ul", "ol", "tr", "table", "section", "article", "header",
     "footer", "h1", "h2", "h3", "h4", "h5", "h6", "pre", "blockquote", "title", "hr"}
)  # fmt: skip
_TAG_OPEN = re.compile(r"<")
_TAG_END_OR_VALUE = re.compile(r""">|=\s*(["'])""")  # a quote opens a value only after `=`
_NAME = re.compile(r"[a-zA-Z][^\s/>]*")
_RAW_END = {name: re.compile(rf"</{name}", re.IGNORECASE) for name in _RAW_TEXT}
_COMMENT_END = re.compile(r"-->")
_GT = re.compile(r">")


class Scan:
    """One pass over a page; `examined` counts the characters every search looked at."""

    def __init__(self, page: str) -> None:
        self.page = page
        self.examined = 0
        self.parts: list[str] = []
        self._skipping: list[str] = []

    def _search(self, pattern: re.Pattern[str], start: int) -> re.Match[str] | None:
        found = pattern.search(self.page, start)
        self.examined += (found.end() if found else len(self.page)) - start
        return found

    def _text(self, text: str) -> None:
        if text and not self._skipping:
            self.parts.append(html.unescape(text))

    def run(self) -> str:
        page, at = self.page, 0
        while at < len(page):
            lt = self._search(_TAG_OPEN, at)
            if lt is None:
                self._text(page[at:])
                break
            self._text(page[at : lt.start()])
            after = self._markup(lt.start())
            if after is None:  # markup left open: the rest of the page is inside it
                break
            at = after
        return "".join(self.parts)

    def _markup(self, lt: int) -> int | None:
        """Where the text resumes after the `<` at `lt`, or None when nothing more is text."""
        page = self.page
        if page.startswith("<!--", lt):
            end = self._search(_COMMENT_END, lt + 4)
            return None if end is None else end.end()
        bogus_end_tag = page.startswith("</", lt) and not _NAME.match(page, lt + 2)
        if page.startswith(("<!", "<?"), lt) or bogus_end_tag:
            if page.startswith("</>", lt):
                return lt + 3
            end = self._search(_GT, lt + 2)  # a declaration or a bogus comment: up to `>`
            return None if end is None else end.end()
        closing = page.startswith("</", lt)
        name = _NAME.match(page, lt + 2 if closing else lt + 1)
        if name is None:  # a lone `<` is text
            self._text("<")
            return lt + 1
        self.examined += name.end() - name.start()
        after = self._tag_end(name.end())
        if after is None:
            return None
        tag = name.group().lower()
        if closing:
            self._end_tag(tag)
            return after
        if tag in _SKIPPED:
            self._skipping.append(tag)
        elif tag in _BLOCKS:
            self.parts.append("\n")
        if tag in _RAW_TEXT:
            end = self._search(_RAW_END[tag], after)
            if end is None:
                return None
            self._end_tag(tag)
            close = self._search(_GT, end.end())
            return None if close is None else close.end()
        return after

    def _tag_end(self, at: int) -> int | None:
        """Just past the `>` closing a tag whose attributes start at `at` (quotes respected)."""
        while True:
            hit = self._search(_TAG_END_OR_VALUE, at)
            if hit is None:
                return None
            if hit.group() == ">":
                return hit.end()
            close = self.page.find(hit.group(1), hit.end())
            self.examined += (close + 1 if close >= 0 else len(self.page)) - hit.end()
            if close < 0:
                return None
            at = close + 1

    def _end_tag(self, tag: str) -> None:
        if self._skipping:
            if tag == self._skipping[-1]:
                self._skipping.pop()
        elif tag in _BLOCKS:
            self.parts.append("\n")


def html_text(page: str) -> str:
    lines = (re.sub(r"[ \t\r\f\v]+", " ", line).strip() for line in Scan(page).run().split("\n"))
    return "\n".join(line for line in lines if line)
