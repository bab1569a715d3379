"""Build hook for the optional C speedups (mockbroker/records/_speedups.c: record checks;
mockbroker/protocol/_fastproduce.c: the Produce request/response codec).

Everything else about the package lives in pyproject.toml.  The extension is optional: where no C
compiler is available the build goes on without it and mockbroker uses its pure-Python checks
(set MOCKBROKER_PURE_PYTHON=1 to use them even when the extension is built).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "mockbroker.records._speedups",
            sources=["mockbroker/records/_speedups.c"],
            optional=True,
            extra_compile_args=["-O2"],
        ),
        Extension(
            "mockbroker.protocol._fastproduce",
            sources=["mockbroker/protocol/_fastproduce.c"],
            optional=True,
            extra_compile_args=["-O2"],
        ),
    ]
)
