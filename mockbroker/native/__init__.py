"""The optional C extensions, all in one place (see ARCHITECTURE.md, "Native code").

``codecs/`` holds pure functions over bytes; ``lanes/`` holds the only C that touches broker objects.  The
built modules (``_speedups``, ``_fastproduce``, ``_fastfetch``, ``_producelane``, ``_reading``) are imported by
the Python modules they stand in for, never directly by handlers; the Python path is the reference semantics
and runs alone with ``MOCKBROKER_PURE_PYTHON=1`` or where no C compiler was found at install time.
"""
