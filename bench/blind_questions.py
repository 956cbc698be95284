"""Questions nobody tuned for: Kotlin, Swift, Python, Rust, Elixir, TypeScript, Go, Java, C#, C++, C, PHP and Lua
code, asked in the semble benchmark's form: seven repositories asked at length, twenty-three in its own short form.

Why (issue 35): the ranking is judged on a held-out split of the semble benchmark, in languages the development
split lacks (Kotlin, Swift, Elixir) as well as its own. This bench asks what an agent asks in words, on code nobody here
tuned for: semantic, architecture and symbol questions, in ``bench/blind_questions/*.json``. Helper sessions wrote
them on 2026-11-28 by reading the code, before any search ran on them and without running one. The gold is the
file a developer would want first, with other good answers as secondary.

- ``expo-android`` and ``expo-ios``, 25 questions each: the ``android/`` (Kotlin, some Java and C++) and ``ios/``
  (Swift, some Objective-C) folders of the npm package ``expo-modules-core``, at the version ``bench/languages.py``
  pins (fetched with ``npm pack``). Each folder is one repository, as a held-out repository is one project.
- ``docutils``, 25 questions: docutils 0.21.2's source distribution from PyPI, whole (its ``docs/``, ``test/`` and
  ``tools/`` beside the library). docutils is developed on SourceForge, not on GitHub, where the semble benchmark
  takes its repositories.
- ``mercurial``, 25 questions (3 of them on its Rust): Mercurial 6.9.4's source distribution from PyPI, whole (its
  Python core and extensions, C extensions, Rust crates, tests and ``contrib/``). Mercurial is developed on its own
  Heptapod server, not on GitHub.
- ``elixir-core``, 25 questions (3 of them on its Erlang, which ChunkHound does not index), written the same way
  in a later session: the ``lib/elixir/`` folder of Elixir 1.14.0's source (the standard library, with its Erlang
  compiler), from Debian's source archive, the one registry here that holds Elixir's source (its checksum pinned).
- ``rxjs``, 26 questions, written the same way in a later session: the ``src/`` folder (TypeScript) of the npm
  package rxjs 7.8.1 (fetched with ``npm pack``, the tarball's checksum pinned).
- ``rayon``, 25 questions, written the same way in a later session: the Rust crate rayon 1.6.1 whole (``src/``,
  ``tests/``, its Markdown), as Debian ships it (``librust-rayon-dev``, the package's checksum pinned): the
  held-out split has Rust, which the other sets ask only 3 questions in.

The twenty-three asked in the short form (a noun phrase of 3 to 8 words, a "how ..." question, a name), as the semble
benchmark asks, 20 questions each unless said (10 semantic, 6 architecture, 4 symbol), written on 2026-11-29 the
same way; the long questions above say far more words than the held-out split's will:

- first round: ``werkzeug`` (werkzeug 3.1.3's source distribution from PyPI, whole), ``query-core`` (15: the
  ``src/`` folder of the npm package @tanstack/query-core 5.108.4), ``hyper`` (the Rust crate hyper 0.14.19, as
  Debian ships it), ``expo-notifications`` (the ``android/`` folder, Kotlin and Java, of the npm package
  expo-notifications 0.32.12). Its first answers showed what a word of tests or documentation asks for
  (``wants._asks_for``), so it is no longer blind.
- second round, written after that change and run once before and after it: ``click`` (click 8.1.7's source
  distribution), ``redux-toolkit`` (the ``src/`` folder of @reduxjs/toolkit 2.15.0), ``tower`` (the Rust crate
  tower 0.4.13, Debian's), ``expo-notifications-ios`` (12: the same package's ``ios/`` folder, Swift).
- third round, written while the pass measured the first two, and run once, at its end: ``httpx`` (httpx
  0.28.1's source distribution), ``mobx`` (the ``src/`` folder of mobx 6.15.0), ``h2`` (the Rust crate h2 0.3.13,
  Debian's), ``urfave-cli`` (the Go module github.com/urfave/cli/v2 2.3.0, as Debian ships it:
  ``golang-github-urfave-cli-v2-dev``), ``react-native-screens`` (the ``android/`` folder, Kotlin, of
  react-native-screens 4.30.1).
- fourth round, 9 semantic, 6 architecture and 5 symbol questions each, in languages no other set asks in,
  written on 2026-11-29 and run once, at main's head then: ``pythonnet`` (C#: the ``src/runtime/`` folder of
  pythonnet 3.2.1's source distribution), ``pybind11`` (C++ headers: ``include/pybind11/`` of pybind11 3.1.0's),
  ``libuv`` (C: the libuv that uvloop 0.23.0's source distribution vendors, with its tests and build files),
  ``commonmark`` (PHP: league/commonmark 2.3.9's ``League/CommonMark/`` folder, as Debian ships it) and
  ``penlight`` (Lua: Penlight 1.13.1's ``pl/``, Debian's). Its answers showed two ways C++ declares a class that
  the lookup misread (``names._MACRO``, and ``const Foo &`` taken for a declaration), so it is no longer blind.
- fifth round, written the same day in the development split's languages while the fourth was measured, and run
  once, with the fourth round's change in (2344baa): ``rich`` (rich 13.9.4's source distribution), ``immer`` (12: the
  ``src/`` folder, TypeScript, of immer 10.1.0), ``logrus`` (the Go module github.com/sirupsen/logrus 1.9.0,
  Debian's), ``clap`` (the Rust crate clap 4.0.32, Debian's) and ``svg-android`` (the ``android/`` folder, Java,
  of react-native-svg 15.16.1).

Pass ``-- --repos NAME,...`` to run a part (the seven long ones: ``expo-android,expo-ios,docutils,mercurial,
elixir-core,rxjs,rayon``).

The script lays them out as a benchmark folder (``repos.tsv``, ``annotations/``, ``repos.tar.xz``) and runs
``bench/semble.py`` on it. So the systems, the real ChunkHound 6.1.0 index without embeddings, semble 0.7.0 as
semble-bm25 and the scoring are the same as on the semble split (semble.py's header names the folder). Every
option after ``--`` goes to semble.py (``--no-semble``, ``--per-query F``, ``--modes hybrid``,
``--repos docutils``).

Run from the repository root. The first run downloads about 34 MB, installs semble into the work folder's cache and
indexes for about nine minutes (Mercurial's 61,685 chunks most of it); later runs take about 90 s::

    .venv-test/bin/python bench/blind_questions.py --work /tmp/blind-questions
    .venv-test/bin/python bench/blind_questions.py --work /tmp/blind-questions -- --no-semble --modes hybrid

It prints Markdown and asserts nothing.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import shutil
import subprocess
import sys
import tarfile
import tempfile
import urllib.request
from collections.abc import Sequence
from pathlib import Path

import languages
import semble

QUESTIONS = Path(__file__).resolve().with_name("blind_questions")
DOCUTILS = "docutils==0.21.2"
MERCURIAL = "mercurial==6.9.4"
ELIXIR = "http://deb.debian.org/debian/pool/main/e/elixir-lang/elixir-lang_1.14.0.dfsg.orig.tar.xz"
ELIXIR_SHA256 = "3dfa724f36b90d1bc41b9626a8ea0c293255c3a21a4d608c576ce39e2a23e5c9"  # Debian's .dsc says so
RXJS = "rxjs@7.8.1"
RXJS_SHA256 = "c532167725ab7d085123209156c93cef22f2479cb9c8527060f1cd903aa9d149"  # the tarball npm pack fetched
RAYON = "http://deb.debian.org/debian/pool/main/r/rust-rayon/librust-rayon-dev_1.6.1-1_amd64.deb"
RAYON_SHA256 = "2f04ea06c755036d57b9e6b297bc3457bc86058f459fc1ee8d4ec51db5d640b2"  # apt-get download --print-uris
# The four asked in the benchmark's short form:
WERKZEUG = "werkzeug==3.1.3"
QUERY_CORE = "@tanstack/query-core@5.108.4"
QUERY_CORE_SHA256 = "7660b37f747ce33f1e5456299009dbe217a08514f402c13e633ae95727e361e0"
HYPER = "http://deb.debian.org/debian/pool/main/r/rust-hyper/librust-hyper-dev_0.14.19-1_amd64.deb"
HYPER_SHA256 = "aece343fc0a52b2bc5f479962d8ed191ee4ac75716224cfdc693515234e2beef"
NOTIFICATIONS = "expo-notifications@0.32.12"
NOTIFICATIONS_SHA256 = "8fb41fc5b60ae9d13a6097a36b95b8cd59a775586b1ffeb07b79d0702ae5415f"
CLICK = "click==8.1.7"
REDUX_TOOLKIT = "@reduxjs/toolkit@2.15.0"
REDUX_TOOLKIT_SHA256 = "20424372851b608ae3b504eb06d93d6bb80f53217e4a0c3f3a558303a115b87e"
TOWER = "http://deb.debian.org/debian/pool/main/r/rust-tower/librust-tower-dev_0.4.13-2_amd64.deb"
TOWER_SHA256 = "34c4b5485085944a2152a9fb97bbcc965795d5e6f4e0ed24684423d3a66b0093"
HTTPX = "httpx==0.28.1"
MOBX = "mobx@6.15.0"
MOBX_SHA256 = "20639283edb77187166a98ddc4620ee5c60bb83a6cc304506bb59545bd44ae29"
H2 = "http://deb.debian.org/debian/pool/main/r/rust-h2/librust-h2-dev_0.3.13-2_amd64.deb"
H2_SHA256 = "6e987d5b9c9942144ec3d8765aa865812aa6b349a1a25110e3297641260f4cd4"
URFAVE_CLI = "http://deb.debian.org/debian/pool/main/g/golang-github-urfave-cli-v2/golang-github-urfave-cli-v2-dev_2.3.0-2_all.deb"
URFAVE_CLI_SHA256 = "13d2a5cdf924d4c161d2f75d173888fc4dd4b1d0e04f64418f915979c811aa53"
SCREENS = "react-native-screens@4.30.1"
SCREENS_SHA256 = "04593f281d706615907e8df114288daa5145c4f5360c4743356dd460e979d23a"
# The fourth round, in five languages none of the others asks in:
PYTHONNET = "pythonnet==3.2.1"
PYBIND11 = "pybind11==3.1.0"
UVLOOP = "uvloop==0.23.0"
COMMONMARK = (
    "http://deb.debian.org/debian/pool/main/p/php-league-commonmark/php-league-commonmark_2.3.9-1+deb12u1_all.deb"
)
COMMONMARK_SHA256 = "c702ba9fbe6727f011f25eba2bdb89871b56f37d811092e51089816df8eecd81"
PENLIGHT = "http://deb.debian.org/debian/pool/main/l/lua-penlight/lua-penlight_1.13.1-3_all.deb"
PENLIGHT_SHA256 = "69918434ee650d06aa470d49ba05a1a16ae43e66b8216e135cc5075f7d5d9ff3"
# The fifth, in the development split's languages:
RICH = "rich==13.9.4"
IMMER = "immer@10.1.0"
IMMER_SHA256 = "96910b48fbc79604859122901292bbc5b97643402933709a2852915ba5747022"
LOGRUS = "http://deb.debian.org/debian/pool/main/g/golang-logrus/golang-github-sirupsen-logrus-dev_1.9.0-1_all.deb"
LOGRUS_SHA256 = "51fb87b05452e96be38b97c03d5f997f6ce3a144421f911338d6c4ea2e8aa118"
CLAP = "http://deb.debian.org/debian/pool/main/r/rust-clap/librust-clap-dev_4.0.32-1_amd64.deb"
CLAP_SHA256 = "00922f24c3eb5a899ae4438ebf7be2e82085559ee45055dbc856cdb113de9ebb"
SVG = "react-native-svg@15.16.1"
SVG_SHA256 = "6142083abdb5772be857ff2ad196488a032591aeb956750ff9bf0ea52bae77e1"


def _download(url: str, sha256: str) -> bytes:
    """The file at ``url``, whose checksum must be ``sha256``."""
    with urllib.request.urlopen(url, timeout=120) as response:
        data = response.read()
    digest = hashlib.sha256(data).hexdigest()
    if digest != sha256:
        raise SystemExit(f"Error: {url} has sha256 {digest}, not {sha256}")
    return data


def sdist(work: Path, requirement: str) -> Path:
    """A package's source distribution from PyPI, unpacked under ``work`` (downloaded once)."""
    name, _, version = requirement.partition("==")
    root = work / f"{name}-{version}"
    if root.is_dir():
        return root
    with tempfile.TemporaryDirectory() as download:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:", "-d", download,
             requirement],
            check=True,
        )  # fmt: skip
        (archive,) = Path(download).glob("*.tar.gz")
        with tarfile.open(archive) as tar:
            tar.extractall(download, filter="data")
        shutil.move(str(Path(download) / root.name), root)
    return root


def elixir(work: Path) -> Path:
    """Elixir 1.14.0's source, unpacked under ``work`` (downloaded once, its checksum checked)."""
    root = work / "elixir-1.14.0"
    if root.is_dir():
        return root
    with tempfile.TemporaryDirectory() as download:
        with tarfile.open(fileobj=io.BytesIO(_download(ELIXIR, ELIXIR_SHA256))) as tar:
            tar.extractall(download, filter="data")
        shutil.move(str(Path(download) / root.name), root)
    return root


def debian_folder(work: Path, url: str, sha256: str, folder: str, name: str) -> Path:
    """A folder of a Debian package (a Rust crate under ``usr/share/cargo/registry/``, a Go module under
    ``usr/share/gocode/src/``), unpacked under ``work`` as ``name`` with ``dpkg-deb`` (downloaded once, its checksum
    checked)."""
    root = work / name
    if root.is_dir():
        return root
    with tempfile.TemporaryDirectory() as download:
        deb = Path(download) / "package.deb"
        deb.write_bytes(_download(url, sha256))
        subprocess.run(["dpkg-deb", "--extract", str(deb), download], check=True)
        shutil.move(str(Path(download) / folder), root)
    return root


def debian_crate(work: Path, url: str, sha256: str, crate: str) -> Path:
    """A Rust crate's source as Debian ships it (``librust-*-dev``)."""
    return debian_folder(work, url, sha256, f"usr/share/cargo/registry/{crate}", crate)


def go_module(work: Path, url: str, sha256: str, module: str) -> Path:
    """A Go module's source as Debian ships it (``golang-*-dev``)."""
    return debian_folder(work, url, sha256, f"usr/share/gocode/src/{module}", module.replace("/", "-"))


def npm_package(work: Path, spec: str, sha256: str) -> Path:
    """An npm package's published files (``package/``), unpacked under ``work`` (fetched once with ``npm pack``,
    the tarball's checksum checked)."""
    root = work / spec.lstrip("@").replace("/", "-").replace("@", "-")
    if root.is_dir():
        return root
    with tempfile.TemporaryDirectory() as download:
        subprocess.run(
            ["npm", "pack", "--silent", "--pack-destination", download, spec], check=True, stdout=subprocess.DEVNULL
        )
        (archive,) = Path(download).glob("*.tgz")
        digest = hashlib.sha256(archive.read_bytes()).hexdigest()
        if digest != sha256:
            raise SystemExit(f"Error: {spec}'s tarball has sha256 {digest}, not {sha256}")
        with tarfile.open(archive) as tar:
            tar.extractall(download, filter="data")
        shutil.move(str(Path(download) / "package"), root)
    return root


def lay_out(work: Path) -> Path:
    """The benchmark folder under ``work``, in semble.py's form, made from the packages (fetched once): each
    repository is (name, language, where it is from, the folder to archive, its benchmark root in it)."""
    expo = languages.prepare(work)
    notifications = npm_package(work, NOTIFICATIONS, NOTIFICATIONS_SHA256)
    redux_toolkit = npm_package(work, REDUX_TOOLKIT, REDUX_TOOLKIT_SHA256)
    cli = go_module(work, URFAVE_CLI, URFAVE_CLI_SHA256, "github.com/urfave/cli/v2")
    screens = npm_package(work, SCREENS, SCREENS_SHA256)
    commonmark = debian_folder(
        work, COMMONMARK, COMMONMARK_SHA256, "usr/share/php/League/CommonMark", "league-commonmark-2.3.9"
    )
    penlight = debian_folder(work, PENLIGHT, PENLIGHT_SHA256, "usr/share/lua/5.1/pl", "penlight-1.13.1")
    repositories = (
        ("expo-android", "kotlin", languages.PACKAGE, expo / "android", "android"),
        ("expo-ios", "swift", languages.PACKAGE, expo / "ios", "ios"),
        ("docutils", "python", DOCUTILS, sdist(work, DOCUTILS), ""),
        ("mercurial", "python", MERCURIAL, sdist(work, MERCURIAL), ""),
        ("elixir-core", "elixir", ELIXIR, elixir(work) / "lib" / "elixir", ""),
        ("rxjs", "typescript", RXJS, npm_package(work, RXJS, RXJS_SHA256) / "src", "src"),
        ("rayon", "rust", RAYON, debian_crate(work, RAYON, RAYON_SHA256, "rayon-1.6.1"), ""),
        ("werkzeug", "python", WERKZEUG, sdist(work, WERKZEUG), ""),
        ("query-core", "typescript", QUERY_CORE, npm_package(work, QUERY_CORE, QUERY_CORE_SHA256) / "src", "src"),
        ("hyper", "rust", HYPER, debian_crate(work, HYPER, HYPER_SHA256, "hyper-0.14.19"), ""),
        ("expo-notifications", "kotlin", NOTIFICATIONS, notifications / "android", "android"),
        ("click", "python", CLICK, sdist(work, CLICK), ""),
        ("redux-toolkit", "typescript", REDUX_TOOLKIT, redux_toolkit / "src", "src"),
        ("tower", "rust", TOWER, debian_crate(work, TOWER, TOWER_SHA256, "tower-0.4.13"), ""),
        ("expo-notifications-ios", "swift", NOTIFICATIONS, notifications / "ios", "ios"),
        ("httpx", "python", HTTPX, sdist(work, HTTPX), ""),
        ("mobx", "typescript", MOBX, npm_package(work, MOBX, MOBX_SHA256) / "src", "src"),
        ("h2", "rust", H2, debian_crate(work, H2, H2_SHA256, "h2-0.3.13"), ""),
        ("urfave-cli", "go", URFAVE_CLI, cli, ""),
        ("react-native-screens", "kotlin", SCREENS, screens / "android", "android"),
        ("pythonnet", "csharp", PYTHONNET, sdist(work, PYTHONNET) / "src" / "runtime", ""),
        ("pybind11", "cpp", PYBIND11, sdist(work, PYBIND11) / "include" / "pybind11", ""),
        ("libuv", "c", UVLOOP, sdist(work, UVLOOP) / "vendor" / "libuv", ""),
        ("commonmark", "php", COMMONMARK, commonmark, ""),
        ("penlight", "lua", PENLIGHT, penlight, ""),
        ("rich", "python", RICH, sdist(work, RICH), ""),
        ("immer", "typescript", IMMER, npm_package(work, IMMER, IMMER_SHA256) / "src", "src"),
        ("logrus", "go", LOGRUS, go_module(work, LOGRUS, LOGRUS_SHA256, "github.com/sirupsen/logrus"), ""),
        ("clap", "rust", CLAP, debian_crate(work, CLAP, CLAP_SHA256, "clap-4.0.32"), ""),
        ("svg-android", "java", SVG, npm_package(work, SVG, SVG_SHA256) / "android", "android"),
    )
    data = work / "benchmark"
    shutil.rmtree(data, ignore_errors=True)
    (data / "annotations").mkdir(parents=True)
    rows = ["# name\tlanguage\tgithub\trevision\tbenchmark_root"]
    with tarfile.open(data / "repos.tar.xz", "w:xz") as tar:
        for name, language, source, folder, root in repositories:
            tar.add(folder, arcname=f"{name}/{root}" if root else name)
            shutil.copy2(QUESTIONS / f"{name}.json", data / "annotations" / f"{name}.json")
            rows.append(f"{name}\t{language}\t-\t{source}\t{root or '-'}")
    (data / "repos.tsv").write_text("\n".join(rows) + "\n")
    return data


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    passed = argv[argv.index("--") + 1 :] if "--" in argv else []
    own = argv[: argv.index("--")] if "--" in argv else argv
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--work", type=Path, help="directory for the packages, their indexes and semble (kept)")
    args = parser.parse_args(own)
    with tempfile.TemporaryDirectory() as scratch:
        work = (args.work or Path(scratch)).resolve()
        work.mkdir(parents=True, exist_ok=True)
        data = lay_out(work)
        return semble.main(["--data", str(data), "--cache-dir", str(work / "semble"), *passed])


if __name__ == "__main__":
    sys.exit(main())
