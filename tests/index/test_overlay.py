"""The checkout over its index: a file changed, added or deleted since indexing answers as it is now, by words,
names and regex, in search, related and usages, with no indexer run (the sample project, our indexer's index)."""

from __future__ import annotations

import time

from conftest import ranked

import onetool_code

NEW_FUNCTION = "\n\ndef jittered_pause_for_attempt(attempt: int) -> float:\n    return attempt * 0.5\n"


def _paths(hits) -> list[str]:
    return [hit.file_path for hit in hits]


def test_an_edit_is_found_by_its_name_at_its_new_lines(project):
    retry = project.root / "src/bookshelf/retry.py"
    old = retry.read_text()
    retry.write_text("# moved down\n" * 5 + old + NEW_FUNCTION)

    hits = ranked(project.root, project.base_url, "jittered_pause_for_attempt", mode="lexical").hits
    top = hits[0]
    assert (top.file_path, top.symbol) == ("src/bookshelf/retry.py", "jittered_pause_for_attempt")
    lines = retry.read_text().splitlines()
    assert lines[top.start_line - 1].startswith("def jittered_pause_for_attempt")
    moved = ranked(project.root, project.base_url, "backoff_delays", mode="hybrid").hits[0]
    assert lines[moved.start_line - 1].startswith("def backoff_delays")  # 5 lines down, as the file is now
    assert project.digest() == project.digest()


def test_a_deleted_file_never_answers(project):
    store = project.root / "services/catalog/store.go"
    assert "services/catalog/store.go" in _paths(ranked(project.root, project.base_url, "store", mode="lexical").hits)
    store.unlink()
    for mode in ("lexical", "hybrid", "semantic", "regex"):
        query = "func" if mode == "regex" else "catalog store"
        assert "services/catalog/store.go" not in _paths(ranked(project.root, project.base_url, query, mode=mode).hits)


def test_a_new_file_answers_by_words_names_and_regex_and_the_answer_says_so(project):
    (project.root / "src/bookshelf/shelves.py").write_text(
        "def count_empty_shelves(shelves: list) -> int:\n    return sum(1 for s in shelves if not s)\n"
    )
    for mode, query in (("lexical", "count_empty_shelves"), ("hybrid", "count_empty_shelves"),
                        ("regex", r"def count_empty_\w+")):  # fmt: skip
        found = ranked(project.root, project.base_url, query, mode=mode)
        assert found.hits[0].file_path == "src/bookshelf/shelves.py", mode
        assert "1 new" in (found.notice or ""), mode


def test_usages_and_related_see_the_checkout(project):
    retry = project.root / "src/bookshelf/retry.py"
    retry.write_text(retry.read_text() + "\n\ndef uses_twice():\n    return backoff_delays(), backoff_delays()\n")
    (project.root / "src/bookshelf/more.py").write_text("from .retry import backoff_delays\n\nbackoff_delays()\n")

    found = onetool_code.usages(name="backoff_delays", path=str(project.root), format="json")
    by_file = {f["path"]: f for f in found["files"]}
    assert "src/bookshelf/more.py" in by_file
    related = onetool_code.related(file="src/bookshelf/more.py", line=3, path=str(project.root), format="json")
    assert (
        related
    )  # the new file's chunk is held: related answers (or says it has no vector) rather than "not in the index"


def test_status_reports_the_checkout(project):
    assert "Checkout: as indexed" in onetool_code.status(path=str(project.root))
    (project.root / "src/bookshelf/shelves.py").write_text("def count_shelves() -> int:\n    return 3\n")
    (project.root / "services/catalog/store.go").unlink()

    text = onetool_code.status(path=str(project.root))
    data = onetool_code.status(path=str(project.root), format="json")

    assert "Checkout: 0 changed, 1 new, 1 deleted since indexing" in text
    assert data["checkout"]["new"] == ["src/bookshelf/shelves.py"]
    assert data["checkout"]["deleted"] == ["services/catalog/store.go"]


def test_a_new_function_is_found_by_a_description_of_it(project, server):
    """Its chunk is embedded with the index's model (the test server's vectors), once per machine."""
    (project.root / "src/bookshelf/shelving.py").write_text(
        "def weigh_parcels_on_the_loading_dock(parcels):\n"
        '    """Weigh every parcel waiting on the loading dock and total the kilograms."""\n'
        "    return sum(parcel.kilograms for parcel in parcels)\n"
    )
    description = "weigh parcels waiting on the loading dock, total kilograms"
    before = len(server.requests)
    found = ranked(project.root, project.base_url, description, mode="semantic")
    assert found.hits[0].file_path == "src/bookshelf/shelving.py"
    assert "no vector" not in (found.notice or "")
    asked = len(server.requests) - before
    assert asked == 2  # the query, and the new chunk in one request

    overlay_reset()  # a new process: the vector is read back from the machine's cache, not asked again
    again = ranked(project.root, project.base_url, description, mode="semantic")
    assert again.hits[0].file_path == "src/bookshelf/shelving.py"
    assert len(server.requests) - before == asked + 1  # the query alone

    hybrid = ranked(project.root, project.base_url, description)
    assert hybrid.hits[0].file_path == "src/bookshelf/shelving.py"
    related = onetool_code.related(file="src/bookshelf/shelving.py", line=3, path=str(project.root),
                                   base_url=project.base_url, format="json")  # fmt: skip
    assert "results" in related, related


def test_without_the_provider_the_checkout_ranks_by_words_and_says_so(project):
    (project.root / "src/bookshelf/shelving.py").write_text("def weigh_parcels(parcels):\n    return len(parcels)\n")
    refused = "http://127.0.0.1:9/v1"
    found = ranked(project.root, refused, "weigh parcels", mode="hybrid")
    assert found.hits[0].file_path == "src/bookshelf/shelving.py"
    assert "words" in found.notice


def test_a_far_checkout_is_embedded_a_request_a_search(project, server, monkeypatch):
    """No search waits on thousands of chunks: each sends one request of at most ``BATCH``, keeps what came back,
    and says how many still rank by words alone."""
    from onetool_code.search import overlay_vectors

    monkeypatch.setattr(overlay_vectors, "BATCH", 3)
    for n in range(7):
        (project.root / f"src/bookshelf/crate_{n}.py").write_text(
            f"def stack_crate_number_{n}(crates):\n    return sorted(crates)[{n}]\n"
        )
    notices, sizes = [], []
    for _ in range(3):
        before = len(server.requests)
        found = ranked(project.root, project.base_url, "stack crate number", mode="semantic")
        notices.append(found.notice or "")
        sizes.append([len(r.body["input"]) for r in server.requests[before:] if r.path.endswith("/embeddings")])
    assert sizes == [[1, 3], [1, 3], [1, 1]]  # the query, then at most three of the new chunks
    assert "4 of the checkout's changed chunks have no vector yet" in notices[0]
    assert "1 of the checkout's changed chunks has no vector yet" in notices[1]
    assert "no vector" not in notices[2]
    assert {f"src/bookshelf/crate_{n}.py" for n in range(7)} <= {hit.file_path for hit in found.hits}


def test_a_provider_that_stalls_on_the_checkout_holds_one_search_only(project, server, monkeypatch):
    monkeypatch.setenv("CHUNKHOUND_EMBEDDING__TIMEOUT", "2")
    (project.root / "src/bookshelf/shelving.py").write_text(
        "def weigh_parcels(parcels):\n    return len(parcels)\n\n\ndef count_parcels(parcels):\n    return 2\n"
    )
    from onetool_code.search import overlay_vectors

    overlay_vectors._failed.clear()
    server.slow_seconds = 20.0
    try:
        first = ranked(project.root, server.url("slowbatch"), "weigh parcels", mode="hybrid")
        before = len(server.requests)
        started = time.perf_counter()
        second = ranked(project.root, server.url("slowbatch"), "weigh parcels", mode="hybrid")
        elapsed = time.perf_counter() - started
    finally:
        server.slow_seconds = 3.0
        overlay_vectors._failed.clear()
    assert "could not be embedded now" in first.notice
    assert "failed them a moment ago" in second.notice
    assert len(server.requests) - before == 1  # the query's request alone
    assert elapsed < 1.5
    assert second.hits[0].file_path == "src/bookshelf/shelving.py"


def overlay_reset() -> None:
    from onetool_code import index

    index.reset()


def test_a_save_in_an_overlaid_checkout_answers_for_every_file_as_it_is_now(project):
    """The overlay is made again at each save, each file's pieces kept by its content: the saved file answers as
    saved, the others as they were, a file saved back to content seen before as that content."""
    retry, config = project.root / "src/bookshelf/retry.py", project.root / "src/bookshelf/config.py"
    old_retry = retry.read_text()
    retry.write_text(old_retry + NEW_FUNCTION)
    config.write_text(config.read_text() + "\n\ndef shelf_limit_from_config() -> int:\n    return 3\n")

    def first(name: str) -> tuple[str, str]:
        tops = {(hit.file_path, hit.symbol) for mode in ("lexical", "hybrid")
                for hit in ranked(project.root, project.base_url, name, mode=mode).hits[:1]}  # fmt: skip
        assert len(tops) == 1, tops
        return tops.pop()

    assert first("jittered_pause_for_attempt") == ("src/bookshelf/retry.py", "jittered_pause_for_attempt")
    assert first("shelf_limit_from_config") == ("src/bookshelf/config.py", "shelf_limit_from_config")
    retry.write_text(old_retry + NEW_FUNCTION.replace("jittered_pause", "steady_pause"))
    assert first("steady_pause_for_attempt") == ("src/bookshelf/retry.py", "steady_pause_for_attempt")
    assert first("shelf_limit_from_config") == ("src/bookshelf/config.py", "shelf_limit_from_config")
    assert "jittered_pause_for_attempt" not in {h.symbol for h in ranked(
        project.root, project.base_url, "jittered_pause_for_attempt", mode="lexical").hits}  # fmt: skip
    retry.write_text("\n" + old_retry + NEW_FUNCTION)  # content cut before, one line down
    top = ranked(project.root, project.base_url, "jittered_pause_for_attempt", mode="lexical").hits[0]
    assert top.symbol == "jittered_pause_for_attempt"
    assert retry.read_text().splitlines()[top.start_line - 1].startswith("def jittered_pause_for_attempt")


def test_every_piece_of_several_new_files_answers_as_itself(project):
    """Each chunk laid over the index has an id of its own: several files of several pieces each, every function
    first for its own name."""
    names = ("a_first", "b_second", "c_third")
    for name in names:
        (project.root / f"src/bookshelf/{name}.py").write_text(
            "".join(f"\n\ndef {name}_fn_{i}(value: int) -> int:\n    return value * {i}\n" for i in range(6))
        )
    for name in names:
        for i in range(6):
            for mode in ("lexical", "hybrid"):
                top = ranked(project.root, project.base_url, f"{name}_fn_{i}", mode=mode).hits[0]
                assert (top.file_path, top.symbol) == (f"src/bookshelf/{name}.py", f"{name}_fn_{i}"), mode
