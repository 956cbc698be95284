"""The answers that list rather than rank, in the formatter's three formats and its byte budget: ``usages`` (a
name's uses, by file) and ``status`` (an index's facts beside the settings a search would use)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from onetool_code import advice, published
from onetool_code.answer.formatting import INDENT, cut, ranges, shown, size
from onetool_code.answer.report import StatusReport
from onetool_code.hits import Usages
from onetool_code.index import CheckoutFacts, SnapshotInfo


def render_usages(found: Usages, fmt: str, max_bytes: int) -> str | dict[str, Any]:
    """Where a name is used: a file per line with its lines under it, or, past ``USES_DETAILED`` uses, a file per
    line with its count and line numbers; files are dropped from the end (docs, then tests) to fit the budget,
    and the last line says how many."""
    detailed = found.count <= USES_DETAILED
    answer = _usages(found, fmt, detailed, len(found.files))
    if size(answer) <= max_bytes:
        return answer
    low, high = 0, len(found.files) - 1  # the most files that fit: a common name is in thousands of files
    while low < high:
        middle = (low + high + 1) // 2
        if size(_usages(found, fmt, detailed, middle)) <= max_bytes:
            low = middle
        else:
            high = middle - 1
    return _usages(found, fmt, detailed, low)


USES_DETAILED = 20  # uses shown line by line; past that, counts and line numbers per file
USE_LINE_CHARS = 120
USE_NUMBERS_SHOWN = 12  # line numbers per file in a long list: a test module may use a name hundreds of times
DEFINITIONS_NAMED = 3


def _usages(found: Usages, fmt: str, detailed: bool, shown_files: int) -> str | dict[str, Any]:
    files = found.files[:shown_files]
    left = len(found.files) - shown_files
    if fmt != "text":
        short = fmt == "compact"
        keys = ("p", "k", "n", "l") if short else ("path", "kind", "count", "lines")
        data: dict[str, Any] = {
            "name": found.name,
            "uses": found.count,
            "files": [
                dict(zip(keys, (f.path, f.kind, len(f.lines), [n for n, _ in f.lines]), strict=True)) for f in files
            ],
            "definitions": [f"{path}:{line}" for path, line in found.definitions],
        }
        if left:
            data["left_out_files"] = left
        return data
    if not found.files:
        return f"No uses found of: {shown(found.name)}" + _defined_at(found)
    noun = "use" if found.count == 1 else "uses"
    where = f"{len(found.files)} file" + ("" if len(found.files) == 1 else "s")
    out = [f"{found.count} {noun} of {shown(found.name)} in {where}{_defined_at(found)}"]
    kind = None
    for f in files:
        if f.kind != kind and f.kind != "code":
            out.append(f"{f.kind}:")
        kind = f.kind
        if detailed:
            out.append(shown(f.path))
            out.extend(shown(f"{INDENT}{n}: {cut(text.strip(), USE_LINE_CHARS)}") for n, text in f.lines)
        else:
            numbers = [n for n, _ in f.lines]
            more = ",..." if len(numbers) > USE_NUMBERS_SHOWN else ""
            out.append(shown(f"{f.path} ({len(numbers)}): {ranges(numbers[:USE_NUMBERS_SHOWN])}{more}"))
    if left:
        files_left = f"{left} file" + ("" if left == 1 else "s")
        out.append(
            f"Left out to stay within the byte budget: {files_left}. For more: include=..., or a larger max_bytes."
        )
    return "\n".join(out)


def _defined_at(found: Usages) -> str:
    """The definitions left out, a few named."""
    if not found.definitions:
        return ""
    named = ", ".join(f"{path}:{line}" for path, line in found.definitions[:DEFINITIONS_NAMED])
    more = (
        f" (+{len(found.definitions) - DEFINITIONS_NAMED} more)" if len(found.definitions) > DEFINITIONS_NAMED else ""
    )
    return shown(f" (definitions left out: {named}{more})")


def render_status(report: StatusReport, fmt: str) -> str | dict[str, Any]:
    if fmt != "text":
        return _status_data(report)
    lines = [
        f"Project: {report.project_root}",
        f"Index: {report.db_path} ({_bytes(report.facts.size_bytes)}, updated {_age(report.facts.age_seconds)} ago)",
    ]
    if report.published is not None:
        lines.append(f"Published: {_published(report.published)}")
    if report.store_notice:
        lines.append(f"Store: {report.store_notice}")
    if report.facts.locked_by:
        lines.append(f"In use: yes, {report.facts.locked_by}")
        return "\n".join(map(shown, lines))
    lines.append(f"Files: {report.facts.files:,}, chunks: {report.facts.chunks:,}")
    if report.facts.embedding_sets:
        lines.append("Embeddings: " + "; ".join(s.describe() for s in report.facts.embedding_sets))
    else:
        lines.append(f"Embeddings: none (lexical search only: {advice.option('mode', 'lexical')})")
    wanted = f"{report.provider}/{report.model}"
    found = "present" if report.model_present else "NOT in this index: semantic search will fail"
    lines.append(
        f"Configured model: {wanted} ({found}"
        + (f"; named by {report.model_chosen_by}" if report.model_chosen_by else "")
        + (f"; queries sent as input_type {report.query_input_type})" if report.query_input_type else ")")
    )
    lines.append(f"Reranker: {report.reranker}")
    if report.facts.languages:
        lines.append(
            "Languages: "
            + ", ".join(f"{lang} {files} files/{chunks} chunks" for lang, files, chunks in report.facts.languages)
        )
    held = report.facts.snapshot
    written = held is not None and held.notice is not None and "is being updated by" in held.notice
    lines.append(f"In use by ChunkHound: {_in_use(report, written)}")
    if held and held.notice and not written:
        lines.append(f"Refresh: {held.notice}")
    lines.append(f"Snapshot: {_snapshot(held)}")
    if report.checkout is not None:
        lines.append(f"Checkout: {_checkout(report.checkout)}")
    lines.extend(f"Note: {note}" for note in report.facts.notes)
    return "\n".join(map(shown, lines))  # the index's sidecar names a root: the repository's text


def render_workspace_status(reports: Sequence[tuple[str, StatusReport | str]], fmt: str) -> str | list[dict[str, Any]]:
    """Each repository's status (a block headed by its label in text, a list in json), or why it has none."""
    if fmt != "text":
        return [
            {"repository": label, **(_status_data(r) if isinstance(r, StatusReport) else {"error": r})}
            for label, r in reports
        ]
    blocks = []
    for label, r in reports:
        told = render_status(r, fmt) if isinstance(r, StatusReport) else f"Error: {shown(r)}"
        blocks.append(f"Repository: {shown(label)}\n{told}")
    return "\n\n".join(blocks)


def _in_use(report: StatusReport, written: bool) -> str:
    """Whether a process holds the index read-write, and what this answer was read from meanwhile."""
    held = report.facts.snapshot
    if written and held is not None:
        return f"yes, {held.notice}"
    if report.facts.held_by is None or held is None:
        return "no"
    pid, program = report.facts.held_by
    made = time.strftime("%H:%M:%S", time.localtime(held.created))
    source = f"a copy of it taken at {made}" if held.copy_seconds else f"the snapshot of {made}"
    return f"yes, {program} (PID {pid}) holds it read-write; this answer is from {source}"


def _published(version: published.Fetched) -> str:
    """Which version of which store answers, when it was published, and from which commit."""
    made = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(version.created))
    told = f"{version.url}, version {version.version}, published {made} ({_age(time.time() - version.created)} ago)"
    if version.git and version.git.get("commit"):
        told += f", commit {str(version.git['commit'])[:12]}" + (" (tree dirty)" if version.git.get("dirty") else "")
    if version.rows_in_store:
        told += "; its vectors' float32 rows are read from the store by range until their fetch completes"
    return told


def _status_data(report: StatusReport) -> dict[str, Any]:
    data: dict[str, Any] = {
        "project": str(report.project_root),
        "index": str(report.db_path),
        "size_bytes": report.facts.size_bytes,
        "age_seconds": round(report.facts.age_seconds),
        "in_use": report.facts.locked_by,
        "held_by": None
        if report.facts.held_by is None
        else {"pid": report.facts.held_by[0], "program": report.facts.held_by[1]},
    }
    if report.facts.locked_by is None:
        data.update(
            files=report.facts.files,
            chunks=report.facts.chunks,
            embeddings=[
                {"provider": s.provider, "model": s.model, "dims": s.dims, "count": s.count}
                for s in report.facts.embedding_sets
            ],
            configured_model=f"{report.provider}/{report.model}",
            configured_model_present=report.model_present,
            configured_model_named_by=report.model_chosen_by,
            query_input_type=report.query_input_type,
            reranker=report.reranker,
            languages={lang: {"files": files, "chunks": chunks} for lang, files, chunks in report.facts.languages},
            notes=list(report.facts.notes),
            snapshot=_snapshot_data(report.facts.snapshot),
        )
    if report.published is not None:
        data["published"] = {**asdict(report.published), "notice": report.store_notice}
    if report.checkout is not None:
        moved = report.checkout.drift
        data["checkout"] = {
            "changed": list(moved.changed),
            "new": list(moved.new),
            "deleted": list(moved.deleted),
            "answered_by": report.checkout.answers,
        }
    return data


def _snapshot(held: SnapshotInfo | None) -> str:
    if held is None:
        return "off (every search reads the index file)"
    made = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(held.created))
    state = "of an earlier state of the index" if held.notice else "of the index as it is"
    source = f"a copy of the index (copied in {held.copy_seconds:.2f} s)" if held.copy_seconds else "the index"
    how = f"{held.delta_chunks:,} chunks read as a delta" if held.delta_chunks else "read whole"
    refreshing = (
        f"; a refresh has been running for {_age(max(0.0, time.time() - held.refreshing))}" if held.refreshing else ""
    )
    return (
        f"{state}, made {made} ({_age(max(0.0, time.time() - held.created))} ago; {how}, {source} held "
        f"{held.read_seconds:.2f} s to read it){refreshing}; snapshots in {held.cache_dir} hold "
        f"{_bytes(held.cache_bytes)}"
    )


def _checkout(found: CheckoutFacts) -> str:
    moved = found.drift
    if not moved.files:
        return "as indexed (no file changed, new or deleted)"
    counts = f"{len(moved.changed):,} changed, {len(moved.new):,} new, {len(moved.deleted):,} deleted since indexing"
    return f"{counts}; answered by {found.answers}"


def _snapshot_data(held: SnapshotInfo | None) -> dict[str, Any] | None:
    if held is None:
        return None
    return {
        "current": held.notice is None,
        "notice": held.notice,
        "created": round(held.created, 3),
        "age_seconds": round(max(0.0, time.time() - held.created)),
        "read_seconds": round(held.read_seconds, 3),
        "copy_seconds": round(held.copy_seconds, 3),
        "delta_chunks": held.delta_chunks,
        "refreshing_seconds": None if held.refreshing is None else round(max(0.0, time.time() - held.refreshing)),
        "folder": str(held.folder),
        "cache_dir": str(held.cache_dir),
        "cache_bytes": held.cache_bytes,
    }


def _bytes(size: int) -> str:
    value = float(size)
    for unit in ("bytes", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{int(value)} bytes" if unit == "bytes" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} bytes"


def _age(seconds: float) -> str:
    for unit, span in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= span:
            n = int(seconds // span)
            return f"{n} {unit}{'s' if n != 1 else ''}"
    return f"{int(seconds)} seconds"
