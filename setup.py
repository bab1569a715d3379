"""Build hook for the optional C extensions.  Every C source and header lives under mockbroker/native/:

- ``native/codecs/``: pure functions over bytes (CRC-32C, the record batch checks, LZ4 frames, the wire
  reads and writes, the Produce codec).  They never include anything from ``lanes/``.
- ``native/lanes/``: the only C that touches broker objects: the usual Produce request from frame to answer
  (``_producelane``), the usual Fetch (``_fastfetch``) and a connection's reads (``_reading``).

The built modules are ``mockbroker.native._speedups``, ``_fastproduce``, ``_fastfetch``, ``_producelane`` and
``_reading``.  The extensions are optional: where no C compiler is available the build goes on without them
and mockbroker runs its pure-Python path, the reference semantics (set MOCKBROKER_PURE_PYTHON=1 to use it even
when the extensions are built).

The packages are listed here too: ``mockbroker*``, and the repository's top-level ``scenarios/`` folder (the
shipped scenarios and their apps) packaged as ``mockbroker.scenarios.library`` (``package_dir``), so an
installed mockbroker finds them inside itself (mockbroker/scenarios/shipped.py).  Everything else about the
package lives in pyproject.toml.
"""

from pathlib import Path

from setuptools import Extension, find_packages, setup

NATIVE = Path("mockbroker/native")
CODECS = NATIVE / "codecs"
LANES = NATIVE / "lanes"


def extension(name: str, folder: Path) -> Extension:
    """One optional extension ``mockbroker.native.<name>`` from ``<folder>/<name>.c``; it may include any header
    of its own folder and of ``codecs/`` (a change to any of them rebuilds it)."""
    headers = sorted({str(h) for h in (*folder.glob("*.h"), *CODECS.glob("*.h"))})
    return Extension(
        f"mockbroker.native.{name}",
        sources=[str(folder / f"{name}.c")],
        depends=headers,
        include_dirs=sorted({str(folder), str(CODECS)}),
        optional=True,
        extra_compile_args=["-O2"],
    )


setup(
    packages=[*find_packages(include=["mockbroker", "mockbroker.*"]), "mockbroker.scenarios.library",
              "mockbroker.scenarios.library.apps"],
    package_dir={"mockbroker.scenarios.library": "scenarios"},
    ext_modules=[
        extension("_speedups", CODECS),
        extension("_fastproduce", CODECS),
        extension("_fastfetch", LANES),
        extension("_producelane", LANES),
        extension("_reading", LANES),
    ]
)
