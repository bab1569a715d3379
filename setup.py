"""Build hook for the optional C extensions.  Every C source and header lives under mockbroker/native/:

- ``native/codecs/``: pure functions over bytes (CRC-32C, the record batch checks, LZ4 frames, the wire
  reads and writes, the Produce codec).  They never include anything from ``lanes/``.
- ``native/lanes/``: the only C that touches broker objects: the usual Produce request from frame to answer
  (``_producelane``), the usual Fetch (``_fastfetch``) and a connection's reads (``_reading``).

The built modules are ``mockbroker.native._speedups``, ``_fastproduce``, ``_fastfetch``, ``_producelane`` and
``_reading``.  The extensions are optional: where no C compiler is available the build goes on without them
and mockbroker runs its pure-Python path, the reference semantics (set MOCKBROKER_PURE_PYTHON=1 to use it even
when the extensions are built).

``build_py`` also copies the repository's top-level ``scenarios/`` folder (the shipped scenarios and their
apps) into the build as ``mockbroker/scenarios/library/``, so an installed mockbroker finds them inside itself
(mockbroker/scenarios/shipped.py); an editable install reads ``scenarios/`` where it is, and its .pth stays a
plain path (no package mapped from another folder).  Everything else about the package lives in pyproject.toml.
"""

from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_py import build_py

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


SCENARIOS = Path("scenarios")
SCENARIO_FILES = (".yaml", ".py", ".md")


class BuildPyWithScenarios(build_py):
    """``build_py``, then the top-level ``scenarios/`` folder copied in as ``mockbroker/scenarios/library/`` (a
    wheel's or a regular install's copy; an editable build leaves it where it is)."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        library = Path(self.build_lib, "mockbroker", "scenarios", "library")
        for source in sorted(SCENARIOS.rglob("*")):
            if source.is_file() and source.suffix in SCENARIO_FILES and "__pycache__" not in source.parts:
                target = library / source.relative_to(SCENARIOS)
                self.mkpath(str(target.parent))
                self.copy_file(str(source), str(target))


setup(
    cmdclass={"build_py": BuildPyWithScenarios},
    ext_modules=[
        extension("_speedups", CODECS),
        extension("_fastproduce", CODECS),
        extension("_fastfetch", LANES),
        extension("_producelane", LANES),
        extension("_reading", LANES),
    ]
)
