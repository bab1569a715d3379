"""Build hook for the optional C speedups (mockbroker/records/_speedups.c: record checks;
mockbroker/protocol/_fastproduce.c: the Produce request/response codec; mockbroker/protocol/_fastfetch.c:
the FetchResponse encoder and FetchRequest reader; mockbroker/handlers/_producelane.c:
the usual Produce request from frame to answer; mockbroker/server/_reading.c: a connection's
get_buffer/buffer_updated; mockbroker/records/batch_checks.h: the batch checks the
first and last share; mockbroker/protocol/wire_reader.h and wire_writer.h: the wire reads and writes the
codecs and the lane share).

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
            depends=["mockbroker/records/batch_checks.h", "mockbroker/records/crc32c_fold.h"],
            optional=True,
            extra_compile_args=["-O2"],
        ),
        Extension(
            "mockbroker.protocol._fastproduce",
            sources=["mockbroker/protocol/_fastproduce.c"],
            depends=["mockbroker/protocol/wire_reader.h", "mockbroker/protocol/wire_writer.h",
                     "mockbroker/protocol/struct_slots.h"],
            optional=True,
            extra_compile_args=["-O2"],
        ),
        Extension(
            "mockbroker.protocol._fastfetch",
            sources=["mockbroker/protocol/_fastfetch.c"],
            depends=["mockbroker/protocol/wire_writer.h", "mockbroker/protocol/struct_slots.h",
                     "mockbroker/protocol/wire_reader.h", "mockbroker/protocol/fetch_request_reader.h",
                     "mockbroker/protocol/fetch_from_logs.h", "mockbroker/protocol/fetch_wanted.h",
                     "mockbroker/protocol/fetch_wait.h",
                     "mockbroker/protocol/fetch_lane.h",
                     "mockbroker/handlers/member_sites.h"],
            include_dirs=["mockbroker/handlers"],
            optional=True,
            extra_compile_args=["-O2"],
        ),
        Extension(
            "mockbroker.handlers._producelane",
            sources=["mockbroker/handlers/_producelane.c"],
            depends=["mockbroker/records/batch_checks.h", "mockbroker/records/crc32c_fold.h",
                     "mockbroker/protocol/wire_reader.h",
                     "mockbroker/handlers/produce_lane_staging.h", "mockbroker/handlers/api_versions_staging.h",
                     "mockbroker/handlers/produce_lane_wire.h", "mockbroker/handlers/produce_lane_append.h",
                     "mockbroker/records/lz4_frames.h",
                     "mockbroker/handlers/member_sites.h", "mockbroker/handlers/direct_send.h",
                     "mockbroker/handlers/kept_answers.h", "mockbroker/handlers/lane_journal.h"],
            include_dirs=["mockbroker/records", "mockbroker/protocol"],
            optional=True,
            extra_compile_args=["-O2"],
        ),
        Extension(
            "mockbroker.server._reading",
            sources=["mockbroker/server/_reading.c"],
            depends=["mockbroker/server/frame_arena.h"],
            optional=True,
            extra_compile_args=["-O2"],
        ),
    ]
)
