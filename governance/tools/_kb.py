"""`kb.search`: BM25 over the documents under `kb/` in the workspace files.

Documents (`.md`, `.markdown`, `.txt`) are read through the sandbox, so links are never
followed and nothing outside the workspace is read. Each document is cut into passages:
paragraphs (runs of non-blank lines), a heading-only paragraph joined to the one after it,
and a paragraph longer than `MAX_PASSAGE_CHARS` cut into windows at whitespace. A passage's
`start`/`end` are character offsets into the file's text: `text[start:end]` is the passage.

Ranking is bm25s (Lucene's BM25 variant, float64), imported only when a search runs, so no
CLI command that does not search pays for numpy. Hits are the passages with a positive score,
ordered by score, then path, then offset, so the same files and query always give the same list;
scores are rounded to `SCORE_DECIMALS` for display only. The last index built is cached under
the content digest of its corpus: an edited, added or removed file is a new digest, hence a new
index that replaces it.

The corpus is capped as a whole, not only per file: more than `MAX_CORPUS_BYTES` of documents,
`MAX_PASSAGES` searchable passages or `MAX_TREE_ENTRIES` directory entries under `kb/` is
refused (`corpus_too_large`, `too_many_entries`) rather than searched in part.
"""

from __future__ import annotations

import hashlib
import re
import threading
import unicodedata
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from governance.tools._fs import Sandbox
from governance.tools._local import LocalTool, ToolExecutionError, local_tool

KB_FOLDER = "kb"
DOCUMENT_SUFFIXES = (".md", ".markdown", ".txt")
MAX_DOCUMENTS = 200
MAX_DOCUMENT_BYTES = 200_000
MAX_PASSAGE_CHARS = 800
MAX_QUERY_CHARS = 500
MAX_TOP_K = 10
DEFAULT_TOP_K = 5
MAX_CORPUS_BYTES = 4 * 1024 * 1024
MAX_PASSAGES = 20_000
MAX_TREE_ENTRIES = 10_000
SCORE_DECIMALS = 4
_CACHED_INDEXES = 1

_WORD = re.compile(r"\w+")
_BLANK_LINE = re.compile(r"\n[ \t\r\f\v]*\n")
_HEADING = re.compile(r"#{1,6}(\s|$)")


@dataclass(frozen=True, slots=True)
class Passage:
    """`text == <file text>[start:end]`, offsets in characters (code points), not bytes."""

    path: str
    start: int
    end: int
    text: str


def split_passages(path: str, text: str) -> list[Passage]:
    """Paragraphs of `text`; heading-only ones joined to the next; long ones windowed."""
    blocks: list[tuple[int, int]] = []
    position = 0
    for separator in [*_BLANK_LINE.finditer(text), None]:
        stop = separator.start() if separator else len(text)
        span = _trimmed(text, position, stop)
        if span is not None:
            blocks.append(span)
        position = separator.end() if separator else len(text)
    merged: list[tuple[int, int]] = []
    pending: int | None = None  # start of heading-only blocks awaiting their paragraph
    for start, end in blocks:
        if _is_heading_only(text[start:end]):
            pending = start if pending is None else pending
            continue
        merged.append((start if pending is None else pending, end))
        pending = None
    if pending is not None:
        merged.append((pending, blocks[-1][1]))
    passages: list[Passage] = []
    for start, end in merged:
        for w_start, w_end in _windows(text, start, end):
            passages.append(Passage(path, w_start, w_end, text[w_start:w_end]))
    return passages


def _trimmed(text: str, start: int, stop: int) -> tuple[int, int] | None:
    while start < stop and text[start].isspace():
        start += 1
    while stop > start and text[stop - 1].isspace():
        stop -= 1
    return (start, stop) if start < stop else None


def _is_heading_only(block: str) -> bool:
    return all(_HEADING.match(line.strip()) for line in block.splitlines())


def _windows(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """`[start, end)` cut into spans of at most MAX_PASSAGE_CHARS, at whitespace if possible."""
    spans: list[tuple[int, int]] = []
    while end - start > MAX_PASSAGE_CHARS:
        limit = start + MAX_PASSAGE_CHARS
        cut = max(text.rfind(ch, start + 1, limit + 1) for ch in (" ", "\n", "\t"))
        cut = cut if cut > start else limit
        span = _trimmed(text, start, cut)
        if span is not None:
            spans.append(span)
        start = cut
        while start < end and text[start].isspace():
            start += 1
    if start < end:
        spans.append((start, end))
    return spans


def tokenize(text: str, stopwords: frozenset[str]) -> list[str]:
    """Case-folded NFKC words; one-letter words and stop words dropped, numbers kept."""
    words = _WORD.findall(unicodedata.normalize("NFKC", text).casefold())
    return [w for w in words if (len(w) > 1 or w.isdigit()) and w not in stopwords]


@dataclass(frozen=True, slots=True)
class _Index:
    passages: tuple[Passage, ...]
    vocabulary: dict[str, int]
    model: Any  # bm25s.BM25, or None when no passage has a searchable word
    stopwords: frozenset[str]


_INDEXES: OrderedDict[str, _Index] = OrderedDict()
_INDEXES_LOCK = threading.Lock()


def corpus_digest(files: list[tuple[str, str]]) -> str:
    digest = hashlib.sha256()
    for path, text in files:
        for part in (path, text):
            data = part.encode("utf-8", "surrogatepass")
            digest.update(len(data).to_bytes(8, "big") + data)
    return digest.hexdigest()


def _index_for(files: list[tuple[str, str]], max_passages: int) -> _Index:
    key = f"{max_passages}:{corpus_digest(files)}"
    with _INDEXES_LOCK:
        found = _INDEXES.get(key)
        if found is not None:
            _INDEXES.move_to_end(key)
            return found
    built = _build_index(files, max_passages)
    with _INDEXES_LOCK:
        _INDEXES[key] = built
        while len(_INDEXES) > _CACHED_INDEXES:
            _INDEXES.popitem(last=False)
    return built


def _build_index(files: list[tuple[str, str]], max_passages: int = MAX_PASSAGES) -> _Index:
    # Imported here, not at module level: numpy costs a tenth of a second to import.
    import bm25s
    from bm25s.stopwords import STOPWORDS_EN

    stopwords = frozenset(STOPWORDS_EN)
    passages: list[Passage] = []
    corpus: list[list[str]] = []
    for path, text in files:
        for passage in split_passages(path, text):
            words = tokenize(passage.text, stopwords)
            if not words:  # a passage with no searchable word can never be a hit
                continue
            if len(passages) >= max_passages:
                message = f"the documents hold more than {max_passages} searchable passages"
                raise ToolExecutionError(
                    "corpus_too_large",
                    f"{message} (from {path!r} on); keep at most {max_passages}",
                    before_effect=True,
                )
            passages.append(passage)
            corpus.append(words)
    if not corpus:
        return _Index((), {}, None, stopwords)
    model = bm25s.BM25(method="lucene", dtype="float64")
    model.index(corpus, show_progress=False)
    vocabulary = {str(word): int(i) for word, i in model.vocab_dict.items()}
    return _Index(tuple(passages), vocabulary, model, stopwords)


def rank(
    files: list[tuple[str, str]], query: str, top_k: int, *, max_passages: int = MAX_PASSAGES
) -> list[tuple[float, Passage]]:
    """The `top_k` best passages for `query` with a positive score, best first; the scores
    returned are rounded, the order and the cut are by the unrounded ones."""
    if not files:
        return []
    index = _index_for(files, max_passages)
    if index.model is None:
        return []
    words = dict.fromkeys(tokenize(query, index.stopwords))  # a repeated word counts once
    ids = [index.vocabulary[w] for w in words if w in index.vocabulary]
    if not ids:
        return []
    scores = index.model.get_scores_from_ids(ids)
    scored = zip((float(score) for score in scores.tolist()), index.passages, strict=True)
    hits = [(score, passage) for score, passage in scored if score > 0]
    hits.sort(key=lambda hit: (-hit[0], hit[1].path, hit[1].start))
    return [(round(score, SCORE_DECIMALS), passage) for score, passage in hits[:top_k]]


def search(
    sandbox: Sandbox,
    query: str,
    top_k: int,
    *,
    max_corpus_bytes: int = MAX_CORPUS_BYTES,
    max_passages: int = MAX_PASSAGES,
    max_entries: int = MAX_TREE_ENTRIES,
) -> dict[str, Any]:
    """The JSON-ready result of one `kb.search` call."""
    if not tokenize(query, frozenset()):
        raise ToolExecutionError("invalid_query", "the query has no words to search for")
    tree = sandbox.read_tree(
        KB_FOLDER,
        suffixes=DOCUMENT_SUFFIXES,
        max_files=MAX_DOCUMENTS,
        max_file_bytes=MAX_DOCUMENT_BYTES,
        max_total_bytes=max_corpus_bytes,
        max_entries=max_entries,
    )
    hits = rank(tree.files, query, top_k, max_passages=max_passages)
    return {
        "query": query,
        "documents": len(tree.files),
        "hits": [
            {
                "rank": number,
                "path": passage.path,
                "start": passage.start,
                "end": passage.end,
                "score": score,
                "text": passage.text,
            }
            for number, (score, passage) in enumerate(hits, start=1)
        ],
        "skipped": [{"path": path, "reason": reason} for path, reason in tree.skipped],
    }


class SearchArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    query: str = Field(
        min_length=1,
        max_length=MAX_QUERY_CHARS,
        description="Words to search the knowledge base for.",
    )
    top_k: int = Field(
        default=DEFAULT_TOP_K,
        ge=1,
        le=MAX_TOP_K,
        description=f"How many passages to return, best first (1-{MAX_TOP_K}).",
    )


def kb_tools(sandbox: Sandbox) -> list[LocalTool]:
    """`kb.search` over the `kb/` folder of one sandbox."""

    @local_tool(
        "kb.search",
        description=(
            f"Search the knowledge base (markdown and text files under {KB_FOLDER}/ in the "
            "workspace files) with BM25. Returns ranked passages: path, start and end "
            "character offsets into the file (text[start:end] is the passage), score, text."
        ),
        args=SearchArgs,
        action_type="read",
        risk="low",
        idempotent=True,
    )
    def kb_search(args: SearchArgs) -> dict[str, Any]:
        return search(sandbox, args.query, args.top_k)

    return [kb_search]
