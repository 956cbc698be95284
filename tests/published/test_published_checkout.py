"""A published index searched against a checkout of its project on this machine (``db`` names the store, ``path``
the checkout): the checkout's own edits are laid over the fetched version as over a local index (issue 37)."""

from __future__ import annotations

from conftest import ranked

import onetool_code
from onetool_code import cli, index

NEW = (
    "def weigh_parcels_on_the_loading_dock(parcels):\n"
    '    """Weigh every parcel waiting on the loading dock and total the kilograms."""\n'
    "    return sum(parcel.kilograms for parcel in parcels)\n"
)


def test_the_checkouts_edits_are_searched_over_a_published_version(capsys, project, tmp_path, monkeypatch):
    url = f"file://{tmp_path / 'shared'}"
    assert cli.main(["publish", url, "--path", str(project.root)]) == 0, capsys.readouterr().err
    monkeypatch.setenv("ONETOOL_CODE_CACHE_DIR", str(tmp_path / "another-machine"))
    index.reset()
    retry = project.root / "src/bookshelf/retry.py"
    retry.write_text("# moved down\n" * 4 + retry.read_text())
    (project.root / "src/bookshelf/shelving.py").write_text(NEW)
    (project.root / "services/catalog/store.go").unlink()

    for mode in ("lexical", "hybrid"):
        hit = ranked(project.root, project.base_url, "weigh_parcels_on_the_loading_dock", mode=mode, db=url).hits[0]
        assert (hit.file_path, hit.symbol) == ("src/bookshelf/shelving.py", "weigh_parcels_on_the_loading_dock"), mode
    described = ranked(project.root, project.base_url, "weigh parcels waiting on the loading dock", db=url)
    assert described.hits[0].file_path == "src/bookshelf/shelving.py"
    for mode in ("semantic", "lexical", "hybrid"):
        found = ranked(project.root, project.base_url, "catalog store", mode=mode, db=url, limit=50)
        assert all(hit.file_path != "services/catalog/store.go" for hit in found.hits), mode
    moved = ranked(project.root, project.base_url, "backoff_delays", mode="lexical", db=url).hits[0]
    assert retry.read_text().splitlines()[moved.start_line - 1].startswith("def backoff_delays")

    status = onetool_code.status(path=str(project.root), db=url, format="json")
    assert status["checkout"]["new"] == ["src/bookshelf/shelving.py"]
    assert status["checkout"]["deleted"] == ["services/catalog/store.go"]
    assert status["published"]["url"] == url
