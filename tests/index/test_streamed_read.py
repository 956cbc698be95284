"""A first read streams the chunks: a window of ids at a time, their code written to disk as it comes; the
lexical index is scored batch by batch to bm25s' own scores, bit for bit."""

from __future__ import annotations

import bm25s
import numpy as np
import pytest

from onetool_code import names
from onetool_code.index import database, lexical, live, rows, snapshot
from onetool_code.index import store as derived
from onetool_code.index.store import STORE
from onetool_code.schema import Filters


@pytest.fixture
def fresh(project, tmp_path, monkeypatch):
    monkeypatch.setenv(derived.CACHE_ENV, str(tmp_path / "cache"))
    STORE.clear()
    yield project
    STORE.clear()


def read_now(project) -> rows.ChunkRows:
    with database.connect(project.root, project.db) as con:
        return rows.build(database.file_rows(con), database.chunk_rows(con))


def test_a_first_read_in_small_windows_holds_every_row_with_its_code_on_disk(fresh, monkeypatch):
    monkeypatch.setattr(snapshot, "CHUNK_WINDOW", 3)  # many windows, some of them empty or partial
    held = live.view(fresh.root, fresh.db).snapshot.chunks
    whole = read_now(fresh)
    assert len(whole) > 20
    assert np.array_equal(held.chunk_ids, whole.chunk_ids) and np.array_equal(held.order, whole.order)
    assert np.array_equal(held.start_lines, whole.start_lines) and np.array_equal(held.end_lines, whole.end_lines)
    assert [held.code[i] for i in range(len(whole))] == [whole.code[i] for i in range(len(whole))]
    assert [held.symbols[i] for i in range(len(whole))] == [whole.symbols[i] for i in range(len(whole))]
    assert all(isinstance(blob, np.memmap) for blob, _ in held.code.parts)


def test_the_lexical_matrix_is_bm25s_own_to_the_bit(fresh, monkeypatch):
    chunks = read_now(fresh)
    monkeypatch.setattr(lexical, "BATCH", 4)  # postings merged from many batches
    ours = lexical.build(chunks)
    documents, _ = lexical._documents(chunks)
    vocabulary = {t: i for t, i in ours.retriever.vocab_dict.items() if t != ""}
    theirs = bm25s.BM25(k1=lexical.K1, b=lexical.B)
    theirs.index(([[vocabulary[t] for t in d] for d in documents], vocabulary), show_progress=False)
    for name in ("data", "indices", "indptr"):
        assert np.array_equal(ours.retriever.scores[name], theirs.scores[name]), name
    assert ours.retriever.scores["data"].dtype == theirs.scores["data"].dtype
    assert ours.retriever.vocab_dict == theirs.vocab_dict
    tokens = names.query_tokens("load the configuration file")
    assert ours.rank([tokens], Filters(), 10)[0]


def test_the_lexical_index_saved_and_mapped_answers_as_built(fresh, tmp_path):
    chunks = read_now(fresh)
    built = lexical.build(chunks)
    (tmp_path / "lexical").mkdir()
    lexical.save(built, tmp_path / "lexical")
    loaded = lexical.load(tmp_path / "lexical", chunks)
    for query in ("retry backoff", "config load file", "server store catalog"):
        tokens = names.query_tokens(query)
        assert loaded.rank([tokens], Filters(), 50) == built.rank([tokens], Filters(), 50), query


def test_a_files_score_is_bm25_over_its_chunks_words_less_its_path(fresh, monkeypatch):
    """Each file scored as one document, counted here from the chunks' own tokens: the same to float64's
    precision, though the index keeps only the chunks' scores (their term frequencies are read back)."""
    from collections import Counter

    chunks = read_now(fresh)
    monkeypatch.setattr(lexical, "BATCH", 4)
    built = lexical.build(chunks)
    documents, _ = lexical._documents(chunks)
    counted: dict[str, Counter] = {}
    for code, document in zip(chunks.attributes.file_codes.tolist(), documents, strict=True):
        path = chunks.attributes.paths[code]
        held = counted.setdefault(path, Counter())
        held.update(document)
        held.subtract(lexical.path_document(path))
    average = sum(held.total() for held in counted.values()) / len(counted)
    for query in ("retry with exponential backoff", "load the configuration file", "ledger reconcile entries"):
        expected = {}
        for token in dict.fromkeys(names.query_tokens(query)):
            df = sum(1 for held in counted.values() if held[token] > 0)
            for path, held in counted.items():
                if held[token] > 0:
                    norm = lexical.K1 * (1 - lexical.B + lexical.B * held.total() / average)
                    score = lexical._idf(df, len(counted)) * held[token] / (held[token] + norm)
                    expected[path] = expected.get(path, 0.0) + score
        ours = built.file_scores(names.query_tokens(query))
        assert len(expected) > 1 and ours.keys() == expected.keys(), query
        for path, score in expected.items():
            assert ours[path] == pytest.approx(score, rel=1e-9), (query, path)


def test_names_are_found_by_their_keys_as_by_reading_every_symbol():
    """``defining``'s name lookup reads only the rows of the name's key: it finds what comparing the name with
    every symbol finds, ``_partN`` suffixes, case and near misses included."""
    from onetool_code.hits import FileRow, FileState

    symbols = ["Load", "load_part1", "load_part1_part2", "load_part", "load_part12", "loader", "LOAD_PART3",
               "x_part2_load", "load_part1x", "_part1", "", "save_part7_part1", "Load_Part1"]  # fmt: skip
    files = [FileRow(1, "a.py", "a.py", "python", len(symbols), FileState(1, 1.0, None))]
    chunks = rows.build(files, [(i, 1, "function", s, "pass", 1, 1) for i, s in enumerate(symbols, 1)])
    names_asked = ["load", "load_part1", "load_part", "save", "save_part7", "part1", "x_part2_load", "loa"]
    for name in names_asked:
        wanted = name.encode()
        every = []
        for i, symbol in enumerate(symbols):
            lowered = symbol.encode().lower()
            rest = lowered[len(wanted) :]
            if lowered.startswith(wanted) and (not rest or rows._PART_SUFFIX.fullmatch(rest)):
                every.append(i)
        assert sorted(chunks._named([name])) == sorted(every), name
