"""Harness tests of tools/extract_docs.py on a synthetic sdist (fixtures/synthetic_sdist)."""

from __future__ import annotations

import gzip
import hashlib
import inspect
import json
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import jax
import pytest
from sybil import Document
from sybil.parsers.markdown import CodeBlockParser
from sybil.parsers.rest import DocTestParser

from tools.manifest_diff import diff_manifests

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = Path(__file__).resolve().parent / "fixtures" / "synthetic_sdist"
VERSION = "9.9.9"


def build_sdist(source: Path, target_dir: Path) -> Path:
    """Packs ``source`` as ``flax-<VERSION>.tar.gz`` the way an sdist is laid out (reproducibly)."""
    target = target_dir / f"flax-{VERSION}.tar.gz"

    def untimed(info: tarfile.TarInfo) -> tarfile.TarInfo:
        info.mtime = 0
        return info

    with gzip.GzipFile(target, "wb", mtime=0) as compressed, tarfile.open(fileobj=compressed, mode="w") as tar:
        for path in sorted(source.rglob("*")):
            if path.is_file():
                tar.add(path, arcname=f"flax-{VERSION}/{path.relative_to(source).as_posix()}", filter=untimed)
    return target


def extract(sdist: Path, out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    """Runs the extractor CLI with flax unimportable, as in an environment without flax."""
    code = (
        "import runpy, sys; sys.modules['flax'] = None; "
        f"sys.argv = ['extract_docs.py', '--sdist', {str(sdist)!r}, '--out', {str(out)!r}, *{list(extra)!r}]; "
        "runpy.run_module('tools.extract_docs', run_name='__main__', alter_sys=True)"
    )
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    """The output folder and manifest of one extraction of the synthetic sdist."""
    work = tmp_path_factory.mktemp("extract")
    sdist = build_sdist(FIXTURE, work)
    out = work / "out"
    result = extract(sdist, out)
    assert result.returncode == 0, f"extractor failed:\n{result.stdout}\n{result.stderr}"
    return out, json.loads((out / "manifest.json").read_text())


def page(manifest: dict, page_id: str) -> dict:
    pages = {entry["id"]: entry for entry in manifest["pages"]}
    assert page_id in pages, f"expected page {page_id}, manifest has {sorted(pages)}"
    return pages[page_id]


def headings(text: str) -> list[str]:
    return [line[3:] for line in text.split("\n") if line.startswith("## ")]


def test_manifest_lists_every_page(generated: tuple[Path, dict]) -> None:
    _, manifest = generated
    ids = [entry["id"] for entry in manifest["pages"]]
    assert ids == ["bridge", "index", "nn/layers", "widgets", "guide:nnx_basics"], ids
    assert manifest["flax_version"] == VERSION
    assert manifest["sdist"]["filename"] == f"flax-{VERSION}.tar.gz"
    assert page(manifest, "index")["examples"] == [], "index pages document nothing"


def test_autoclass_members_and_jax_reexport(generated: tuple[Path, dict]) -> None:
    out, manifest = generated
    text = (out / page(manifest, "widgets")["path"]).read_text()
    # own public documented members, alphabetical; describe inherits Base.describe's docstring
    assert headings(text) == [
        "flax.nnx.Widget",
        "flax.nnx.Widget.describe",
        "flax.nnx.Widget.grow",
        "flax.nnx.make_widget",
        "flax.nnx.relu",
    ], headings(text)
    assert "Describes the object." in text, "Widget.describe should inherit Base.describe's docstring"
    assert "Not public." not in text, "private members are not documented"
    relu_doc = inspect.getdoc(jax.nn.relu)
    assert relu_doc and f"## flax.nnx.relu\n\n{relu_doc}\n" in text, "nnx.relu renders jax.nn.relu's docstring"


def test_flax_module_directive(generated: tuple[Path, dict]) -> None:
    out, manifest = generated
    text = (out / page(manifest, "nn/layers")["path"]).read_text()
    assert headings(text) == [
        "flax.nnx.Widget",
        "flax.nnx.Widget.__call__",
        "flax.nnx.Widget.describe",
        "flax.nnx.Widget.grow",
        "flax.nnx.Widget.undocumented",
    ], headings(text)
    assert "Makes a widget." not in text, "flax_module leaves out __init__"


@pytest.mark.parametrize("page_id", ["widgets", "nn/layers", "bridge"])
def test_examples_match_what_sybil_finds(generated: tuple[Path, dict], page_id: str) -> None:
    out, manifest = generated
    entry = page(manifest, page_id)
    text = (out / entry["path"]).read_text()
    assert entry["sha256"] == hashlib.sha256(text.encode()).hexdigest()
    document = Document(text, entry["path"])
    regions = sorted([*DocTestParser()(document), *CodeBlockParser("python")(document)], key=lambda r: r.start)
    assert len(regions) == len(entry["examples"]), (
        f"sybil finds {len(regions)} examples, manifest lists {len(entry['examples'])}"
    )
    for region, example in zip(regions, entry["examples"]):
        line = text.count("\n", 0, region.start) + 1
        code = isinstance(region.parsed, str)
        assert example["form"] == ("code" if code else "doctest"), example["id"]
        source, want = (str(region.parsed), "") if code else (region.parsed.source, region.parsed.want)
        digest = hashlib.sha256((source + want).encode()).hexdigest()
        assert (line, digest) == (example["line"], example["sha256"]), (
            f"{example['id']}: sybil gives line {line} hash {digest[:12]}, "
            f"manifest line {example['line']} hash {example['sha256'][:12]}"
        )


def test_example_ids_sources_and_apis(generated: tuple[Path, dict]) -> None:
    _, manifest = generated
    examples = page(manifest, "widgets")["examples"]
    assert [e["id"] for e in examples] == [
        "widgets/flax.nnx.Widget:1",
        "widgets/flax.nnx.Widget:2",
        "widgets/flax.nnx.Widget:3",
        "widgets/flax.nnx.Widget.describe:1",
        "widgets/flax.nnx.Widget.grow:1",
        "widgets/flax.nnx.make_widget:1",
        "widgets/flax.nnx.make_widget:2",
        "widgets/flax.nnx.make_widget:3",
        "widgets/flax.nnx.make_widget:4",
        "widgets/flax.nnx.make_widget:5",
        "widgets/flax.nnx.make_widget:6",
    ] + [f"widgets/flax.nnx.relu:{n}" for n in range(1, len(examples) - 10)], [e["id"] for e in examples]
    by_id = {e["id"]: e for e in examples}
    widget_source = (FIXTURE / "flax/nnx/widgets.py").read_text().split("\n")
    second = by_id["widgets/flax.nnx.Widget:2"]
    path, line = second["source"].rsplit(":", 1)
    assert path == "flax/nnx/widgets.py" and widget_source[int(line) - 1].strip() == ">>> w = nnx.Widget(3)"
    assert by_id["widgets/flax.nnx.Widget.describe:1"]["source"].startswith("flax/nnx/widgets.py:")
    assert second["apis"] == ["Widget"]
    assert by_id["widgets/flax.nnx.make_widget:1"]["apis"] == ["make_widget"]
    assert by_id["widgets/flax.nnx.relu:1"]["source"] == "jax:jax.nn.relu"


def test_code_blocks_are_fenced_examples(generated: tuple[Path, dict]) -> None:
    out, manifest = generated
    entry = page(manifest, "widgets")
    text = (out / entry["path"]).read_text()
    lines = text.split("\n")
    by_id = {e["id"]: e for e in entry["examples"]}
    literal = by_id["widgets/flax.nnx.make_widget:4"]
    code = "bigger = make_widget(2).grow()\nassert bigger.size == w.size\n"
    assert "As plain code::\n\n```python\n" + code + "```\n" in text, text
    assert lines[literal["line"] - 1] == "```python" and literal["form"] == "code"
    assert literal["sha256"] == hashlib.sha256(code.encode()).hexdigest()
    assert literal["classification"] == "run" and literal["apis"] == []
    widget_source = (FIXTURE / "flax/nnx/widgets.py").read_text().split("\n")
    _path, line = literal["source"].rsplit(":", 1)
    assert widget_source[int(line) - 1].strip() == "bigger = make_widget(2).grow()"
    directive = by_id["widgets/flax.nnx.make_widget:5"]
    assert ".. code-block:: python\n   :caption: a directive\n\n```python\nassert make_widget(1).size == 1\n```" in text
    assert directive["form"] == "code" and directive["classification"] == "run"
    assert by_id["widgets/flax.nnx.make_widget:1"]["form"] == "doctest"
    assert "Not Python, not an example::\n\n  pip install widgets\n" in text, "a shell block stays a literal block"
    assert all("form" not in e for e in page(manifest, "guide:nnx_basics")["examples"])


def test_classification(generated: tuple[Path, dict]) -> None:
    _, manifest = generated
    widgets = {e["id"]: e for e in page(manifest, "widgets")["examples"]}
    skipped = widgets["widgets/flax.nnx.make_widget:3"]
    assert skipped["classification"] == "excluded" and "SKIP" in skipped["reason"]
    assert widgets["widgets/flax.nnx.make_widget:2"]["classification"] == "run"
    fragment = widgets["widgets/flax.nnx.make_widget:6"]
    assert fragment["classification"] == "excluded"
    assert fragment["reason"] == "fragment: uses amount, which the page never defines", fragment["reason"]
    bridge = page(manifest, "bridge")
    assert bridge["status"] == "excluded" and "Linen" in bridge["reason"]
    assert bridge["examples"] and all(e["classification"] == "excluded" for e in bridge["examples"])
    cells = page(manifest, "guide:nnx_basics")["examples"]
    assert [c["classification"] for c in cells] == ["excluded", "run", "run", "run"]
    assert "shell" in cells[0]["reason"]


def test_guide_page_outputs(generated: tuple[Path, dict]) -> None:
    out, manifest = generated
    entry = page(manifest, "guide:nnx_basics")
    text = (out / entry["path"]).read_text()
    stream_cell = (
        "<!-- cell: 2 -->\n```python\nfrom flax import nnx\nw = nnx.Widget(3)\nprint('size', w.size)\n```\n"
        "<!-- output -->\n```text\nsize 3\n```\n"
    )
    assert stream_cell in text, text
    assert "<!-- cell: 3 -->\n```python\nnnx.Widget(3)(3)\n```\n<!-- output -->\n```text\n9\n```\n" in text
    assert text.endswith("<!-- cell: 4 -->\n```python\nnnx.display(w)\n```\n"), "rich output is not compared"
    assert "warning" not in text, "stderr is not part of the expected output"
    cell = entry["examples"][1]
    lines = text.split("\n")
    assert cell["id"] == "guide:nnx_basics/cell:2" and lines[cell["line"] - 1] == "```python"
    source = "from flax import nnx\nw = nnx.Widget(3)\nprint('size', w.size)\n"
    assert cell["sha256"] == hashlib.sha256((source + "size 3\n").encode()).hexdigest()
    assert cell["apis"] == ["Widget"]
    assert cell["source"].startswith("docs_nnx/nnx_basics.ipynb:")


def test_two_runs_are_byte_identical(generated: tuple[Path, dict], tmp_path: Path) -> None:
    first, _ = generated
    second = tmp_path / "again"
    result = extract(build_sdist(FIXTURE, tmp_path), second)
    assert result.returncode == 0, result.stderr
    files = sorted(p.relative_to(first) for p in first.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(second) for p in second.rglob("*") if p.is_file())
    for name in files:
        assert (first / name).read_bytes() == (second / name).read_bytes(), f"{name} differs between runs"


def test_check_passes_then_names_the_changed_example(tmp_path: Path) -> None:
    sdist = build_sdist(FIXTURE, tmp_path)
    out = tmp_path / "out"
    assert extract(sdist, out).returncode == 0
    check = extract(sdist, out, "--check")
    assert check.returncode == 0, check.stdout + check.stderr
    assert "spec matches manifest (5 pages," in check.stdout, check.stdout

    edited = tmp_path / "edited"
    shutil.copytree(FIXTURE, edited)
    module = edited / "flax/nnx/widgets.py"
    module.write_text(
        module.read_text().replace(
            "    >>> nnx.Widget(1).grow(2).size\n    3\n", "    >>> nnx.Widget(1).grow(2).size\n    4\n"
        )
    )
    (tmp_path / "new").mkdir()
    check = extract(build_sdist(edited, tmp_path / "new"), out, "--check")
    assert check.returncode == 1, check.stdout + check.stderr
    assert "~ example widgets/flax.nnx.Widget.grow:1: source or expected output changed" in check.stdout, check.stdout
    assert "~ example nn/layers/flax.nnx.Widget.grow:1" in check.stdout, check.stdout


def test_manifest_diff_names_added_removed_and_changed() -> None:
    def manifest(examples: list[tuple[str, str]]) -> dict:
        return {
            "flax_version": "1",
            "pages": [
                {
                    "id": "p",
                    "kind": "api",
                    "examples": [{"id": i, "sha256": h, "classification": "run", "line": 1} for i, h in examples],
                }
            ],
        }

    lines = diff_manifests(manifest([("p/a:1", "x"), ("p/b:1", "y")]), manifest([("p/a:1", "z"), ("p/c:1", "w")]))
    assert lines == ["- example p/b:1", "+ example p/c:1", "~ example p/a:1: source or expected output changed"], lines
    assert diff_manifests(manifest([("p/a:1", "x")]), manifest([("p/a:1", "x")])) == []
