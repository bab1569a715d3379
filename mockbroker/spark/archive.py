"""Send mockbroker to Spark executors whose own Python does not have it, the way PySpark documents for
clusters: an archive that Spark unpacks next to each task (``spark.archives``, ``SparkContext.addArchive``).

    ship(spark)                                      # in the driver, before reading or writing
    python -m mockbroker.spark.archive mockbroker.zip   # the same archive, for
    spark-submit --archives mockbroker.zip#mockbroker app.py

The archive holds the package's contents at its top, so ``#mockbroker`` unpacks it as a ``mockbroker``
folder in the directory Spark puts first on every executor's Python path; ``register`` also puts the
driver's unpacked copy on the path of the driver's own planning workers (a streaming source is initialized there,
where neither --py-files zips nor the archives folder are on the path).
It carries mockbroker's modules, package data and built C lanes: an executor whose Python and platform
match the driver's loads them, any other runs the pure-Python path (mockbroker.native.load).  The
executors' Python still needs pyspark, pyarrow and mockbroker's own dependencies (crc32c, cramjam, lz4,
zstandard): install them on the nodes, or ship a packed virtualenv instead (docs/spark.md).
"""

from __future__ import annotations

import argparse
import atexit
import os
import shutil
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

SKIPPED_SUFFIXES = (".c", ".h", ".pyc")  # the built C lanes go along: they load where they fit
_shipped: dict[str, Path] = {}  # Spark application id -> the archive it was sent


def build_archive(path: str | Path) -> Path:
    """Write mockbroker's modules, data files and built C lanes into the zip ``path``, the package's
    contents at its top."""
    import mockbroker

    package = Path(mockbroker.__file__).parent
    out = Path(path)
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        for file in sorted(package.rglob("*")):
            if file.is_dir() or "__pycache__" in file.parts or file.name.endswith(SKIPPED_SUFFIXES):
                continue
            zf.write(file, file.relative_to(package))
    return out


def ship(spark: Any, check: bool = True) -> Path:
    """Add mockbroker's archive to ``spark``'s application (once per application), register the
    ``mockbroker`` format and, with ``check``, make sure every executor can import it (ExecutorSetupError
    with one line if not).  Returns the archive's path."""
    from mockbroker.spark import register

    sc = spark.sparkContext
    app = str(sc.applicationId)
    if app not in _shipped:
        folder = Path(tempfile.mkdtemp(prefix="mockbroker-ship-"))
        atexit.register(shutil.rmtree, folder, True)
        _shipped[app] = build_archive(folder / "mockbroker.zip")
        sc.addArchive(f"{_shipped[app]}#mockbroker")
    register(spark, check=check)
    return _shipped[app]


def on_planner_path(sc: Any) -> None:
    """When the application carries the archive (``ship``, or ``--archives mockbroker.zip#mockbroker``), put
    the driver's unpacked copy on the Python workers' PYTHONPATH too: the driver plans a streaming source in
    a Python worker whose path lacks the folder Spark unpacks archives into.  (On the executors that
    absolute path does not exist and is skipped; their working folder, where the archive is, is on the path.)"""
    from pyspark import SparkFiles

    root = SparkFiles.getRootDirectory()
    if not os.path.isdir(os.path.join(root, "mockbroker")):
        return
    present = sc.environment.get("PYTHONPATH", "")
    if root not in present.split(os.pathsep):
        sc.environment["PYTHONPATH"] = os.pathsep.join(p for p in (present, root) if p)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mockbroker.spark.archive",
                                     description="Write mockbroker as an archive for spark-submit --archives.")
    parser.add_argument("zip", help="where to write it, e.g. mockbroker.zip")
    args = parser.parse_args(argv)
    if not args.zip.endswith(".zip"):
        print(f"python -m mockbroker.spark.archive: {args.zip!r} must end in .zip (the archive is a zip file)",
              file=sys.stderr)
        return 2
    try:
        path = build_archive(args.zip)
    except OSError as error:
        print(f"python -m mockbroker.spark.archive: cannot write {args.zip}: {error.strerror}", file=sys.stderr)
        return 2
    print(f"wrote {path}: spark-submit --archives {path}#mockbroker ...")
    return 0


if __name__ == "__main__":
    sys.exit(main())
