"""The checkout over a real ChunkHound 6.1.0 index of a git repository (issue 37's bar): after ``git checkout`` of
a commit 20 files away, and after edits, what exists only in the checkout is found by its name and by what it does,
what was deleted is never returned, moved code shows at its new lines, ``related`` and ``usages`` agree; and
``chunkhound index`` afterwards changes nothing in what is found."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from conftest import SAMPLE, ranked, settled

import onetool_code

pytestmark = pytest.mark.chunkhound

FINES = '''"""Fines for overdue loans."""


def reconcile_overdue_loans_with_fines(loans, fines):
    """Match every overdue loan with the fine it owes and total the amount due per member."""
    owed = {}
    for loan in loans:
        if loan.overdue:
            owed[loan.member] = owed.get(loan.member, 0) + fines[loan.book]
    return owed
'''
DESCRIPTION = "match every overdue loan with the fine it owes, total amount due per member"
DELETED = ("src/bookshelf/auth.py", "web/src/lruCache.js", "services/catalog/store.go", "indexer/src/cache.rs",
           "docs/api.md", "web/src/rateLimiter.js")  # fmt: skip


def _git(root, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args], cwd=root, check=True,
                   capture_output=True)  # fmt: skip


def _branch(root) -> None:
    """Commit B, 20 files from A: 8 new, 6 deleted, 6 changed (retry.py's code moved 7 lines down)."""
    (root / "src/bookshelf/fines.py").write_text(FINES)
    for n in range(7):
        (root / f"src/bookshelf/extra_{n}.py").write_text(f"def extra_helper_{n}(value):\n    return value + {n}\n")
    for path in DELETED:
        (root / path).unlink()
    retry = root / "src/bookshelf/retry.py"
    retry.write_text("# moved down\n" * 7 + retry.read_text())
    with (root / "src/bookshelf/api.py").open("a") as api:
        api.write("\n\ndef fines_due(request):\n    return reconcile_overdue_loans_with_fines(request.loans, {})\n")
    for path in ("src/bookshelf/config.py", "src/bookshelf/errors.py", "src/bookshelf/cli.py"):
        with (root / path).open("a") as edited:
            edited.write(f"\n\ndef added_to_{path.rsplit('/', 1)[1][:-3]}():\n    return None\n")
    with (root / "README.md").open("a") as readme:
        readme.write("\n\nFines are reconciled nightly.\n")


def _found(root, base_url) -> dict:
    """What the bar looks at: the first result for the name and for the description, where backoff_delays is
    shown, and every file a deleted name is found in."""

    def top(query: str, mode: str) -> tuple[str, int]:
        answer = onetool_code.search(query=query, path=str(root), base_url=base_url, mode=mode, format="json")
        first = answer["results"][0]
        return first["file_path"], first["start_line"]

    deleted_in = set()
    for mode in ("lexical", "hybrid", "semantic"):
        for name in ("issue_token", "validate_token", "LRUCache"):
            deleted_in |= {h.file_path for h in ranked(root, base_url, name, mode=mode).hits}
    deleted_in |= {h.file_path for h in ranked(root, base_url, r"def (issue|validate)_token", mode="regex").hits}
    return {
        "by name": top("reconcile_overdue_loans_with_fines", "hybrid"),
        "by name, words": top("reconcile_overdue_loans_with_fines", "lexical"),
        "by description": top(DESCRIPTION, "semantic"),
        "by description, hybrid": top(DESCRIPTION, "hybrid"),
        "moved": top("backoff_delays", "hybrid"),
        "deleted in": deleted_in & set(DELETED),
    }


def test_a_checkout_20_files_away_is_searched_as_it_is(chunkhound, server, tmp_path):
    root = tmp_path / "repo"
    shutil.copytree(SAMPLE, root, ignore=shutil.ignore_patterns(".chunkhound"))
    _git(root, "init", "-q", "-b", "main")
    (root / ".git/info/exclude").write_text(".chunkhound/\n")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "A")
    _branch(root)
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "B")
    _git(root, "checkout", "-q", "HEAD~1")
    chunkhound.index(root, server.base_url)
    settled(root / ".chunkhound" / "db" / "chunks.db")
    _git(root, "checkout", "-q", "main")

    found = _found(root, server.base_url)

    assert found["by name"][0] == found["by name, words"][0] == "src/bookshelf/fines.py"
    assert found["by description"][0] == found["by description, hybrid"][0] == "src/bookshelf/fines.py"
    assert found["deleted in"] == set()
    lines = (root / "src/bookshelf/retry.py").read_text().splitlines()
    assert found["moved"][0] == "src/bookshelf/retry.py"
    assert lines[found["moved"][1] - 1].startswith("def backoff_delays(")  # 7 lines down, as the file is now
    uses = onetool_code.usages(name="reconcile_overdue_loans_with_fines", path=str(root), format="json")
    assert [f["path"] for f in uses["files"]] == ["src/bookshelf/api.py"]  # the definition is not a use
    like = onetool_code.related(file="src/bookshelf/fines.py", line=5, path=str(root), base_url=server.base_url,
                                format="json")  # fmt: skip
    assert like.get("results"), like
    status = onetool_code.status(path=str(root), format="json")["checkout"]
    assert (len(status["changed"]), len(status["new"]), len(status["deleted"])) == (6, 8, 6)

    # An edit after the checkout: seen by the next search.
    fines = root / "src/bookshelf/fines.py"
    fines.write_text(fines.read_text().replace("reconcile_overdue_loans_with_fines", "settle_overdue_fines"))
    assert ranked(root, server.base_url, "settle_overdue_fines", mode="hybrid").hits[0].file_path == str(
        fines.relative_to(root)
    )
    assert "src/bookshelf/fines.py" not in {
        h.file_path
        for h in ranked(root, server.base_url, "reconcile_overdue_loans_with_fines", mode="lexical").hits
        if "reconcile_overdue_loans_with_fines" in h.code
    }
    fines.write_text(FINES)

    chunkhound.index(root, server.base_url)  # ChunkHound's rows take over: nothing found changes
    settled(root / ".chunkhound" / "db" / "chunks.db")
    after = _found(root, server.base_url)
    # The same files first, backoff_delays at the same lines, nothing deleted found. Not yet the same lines for
    # fines.py: ChunkHound's chunk of this small file starts at its module docstring (line 1), our chunker's at
    # the def (line 4): a difference of the chunkers, left open (issue 37).
    assert {k: v[0] for k, v in after.items() if k.startswith("by")} == {
        k: v[0] for k, v in found.items() if k.startswith("by")
    }
    assert (after["moved"], after["deleted in"]) == (found["moved"], found["deleted in"])
    assert onetool_code.status(path=str(root), format="json")["checkout"]["answered_by"] == "the index (as indexed)"
