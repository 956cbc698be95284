"""Kotlin and Swift questions nobody tuned for: 50 questions in the semble benchmark's form, on expo-modules-core.

Why (issue 35): the held-out split of the semble benchmark has Kotlin and Swift repositories and the development
split has none. ``bench/languages.py`` asks their names only. This bench asks what an agent asks in words: 12
semantic, 9 architecture and 4 symbol questions per language, in ``bench/expo_questions/*.json``. A helper session
wrote them on 2026-11-28 by reading the code, before any search ran on them and without running one. The gold is
the file a developer would want first, with other good answers as secondary.

The code is the npm package ``expo-modules-core`` at the version ``bench/languages.py`` pins (fetched with ``npm
pack``): its ``android/`` folder (Kotlin, some Java and C++) is one repository and its ``ios/`` folder (Swift, some
Objective-C) another. This script lays them out as a benchmark folder (``repos.tsv``, ``annotations/``,
``repos.tar.xz``) and runs ``bench/semble.py`` on it. So the systems, the real ChunkHound 6.1.0 index without
embeddings, semble 0.7.0 as semble-bm25 and the scoring are the same as on the semble split. semble.py's header
still says "development split". Every option after ``--`` goes to semble.py (``--no-semble``, ``--per-query F``,
``--modes hybrid``).

Run from the repository root. The first run downloads about 10 MB, installs semble into the work folder's cache and
indexes for about 30 s; later runs take about 10 s::

    .venv-test/bin/python bench/expo_questions.py --work /tmp/expo-questions
    .venv-test/bin/python bench/expo_questions.py --work /tmp/expo-questions -- --no-semble --modes hybrid

It prints Markdown and asserts nothing.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tarfile
import tempfile
from collections.abc import Sequence
from pathlib import Path

import languages
import semble

QUESTIONS = Path(__file__).resolve().with_name("expo_questions")
# Each platform folder of the package is one repository; its questions' paths are relative to that folder.
REPOSITORIES = (("expo-android", "kotlin", "android"), ("expo-ios", "swift", "ios"))


def lay_out(work: Path) -> Path:
    """The benchmark folder under ``work``, in semble.py's form, made from the package (fetched once)."""
    package = languages.prepare(work)
    data = work / "benchmark"
    shutil.rmtree(data, ignore_errors=True)
    (data / "annotations").mkdir(parents=True)
    rows = ["# name\tlanguage\tgithub\trevision\tbenchmark_root"]
    with tarfile.open(data / "repos.tar.xz", "w:xz") as tar:
        for name, language, folder in REPOSITORIES:
            tar.add(package / folder, arcname=f"{name}/{folder}")
            shutil.copy2(QUESTIONS / f"{name}.json", data / "annotations" / f"{name}.json")
            rows.append(f"{name}\t{language}\texpo/expo\t{languages.PACKAGE}\t{folder}")
    (data / "repos.tsv").write_text("\n".join(rows) + "\n")
    return data


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    passed = argv[argv.index("--") + 1 :] if "--" in argv else []
    own = argv[: argv.index("--")] if "--" in argv else argv
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--work", type=Path, help="directory for the package, its indexes and semble (kept)")
    args = parser.parse_args(own)
    with tempfile.TemporaryDirectory() as scratch:
        work = (args.work or Path(scratch)).resolve()
        work.mkdir(parents=True, exist_ok=True)
        data = lay_out(work)
        return semble.main(["--data", str(data), "--cache-dir", str(work / "semble"), *passed])


if __name__ == "__main__":
    sys.exit(main())
