"""The pinned flax source distribution: fetching it with pip and reading its files."""

from __future__ import annotations

import hashlib
import subprocess
import sys
import tarfile
from dataclasses import dataclass
from pathlib import Path

#: Parts of the sdist the extractor reads: the library source and the NNX docs.
_READ_PREFIXES = ("flax/", "docs_nnx/")
_READ_SUFFIXES = (".py", ".rst", ".ipynb")


@dataclass(frozen=True)
class Sdist:
    """The text files of an sdist that matter to the spec, keyed by path inside the sdist."""

    filename: str
    sha256: str
    files: dict[str, str]

    def read(self, path: str) -> str:
        """The text of ``path`` (relative to the sdist root); KeyError if absent."""
        try:
            return self.files[path]
        except KeyError:
            raise KeyError(f"{path} is not in {self.filename}") from None

    def has(self, path: str) -> bool:
        return path in self.files


def fetch_sdist(version: str, cache_dir: Path) -> Path:
    """The path of ``flax-<version>.tar.gz`` in ``cache_dir``, downloaded with pip if missing."""
    cached = cache_dir / f"flax-{version}.tar.gz"
    if cached.exists():
        return cached
    cache_dir.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--no-binary",
            ":all:",
            f"flax=={version}",
            "-d",
            str(cache_dir),
        ],
        check=True,
    )
    if not cached.exists():
        raise FileNotFoundError(f"pip did not leave {cached.name} in {cache_dir}")
    return cached


def load_sdist(path: Path) -> Sdist:
    """Reads the source and docs files of the sdist tarball at ``path``."""
    data = path.read_bytes()
    files: dict[str, str] = {}
    with tarfile.open(path, mode="r:gz") as tar:
        for member in tar.getmembers():
            if not member.isfile():
                continue
            _, _, inner = member.name.partition("/")
            if inner.startswith(_READ_PREFIXES) and inner.endswith(_READ_SUFFIXES):
                raw = tar.extractfile(member)
                assert raw is not None
                text = raw.read().decode("utf-8")
                files[inner] = text.replace("\r\n", "\n")
    return Sdist(path.name, hashlib.sha256(data).hexdigest(), files)
