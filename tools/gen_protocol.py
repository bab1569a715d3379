"""Generate mockbroker's wire codec from Kafka's JSON message specs.

    python tools/gen_protocol.py            # (re)write mockbroker/protocol/generated/ and error_table.py
    python tools/gen_protocol.py --check    # fail if the committed output differs from a fresh run

The specs are read from ``../shared/kafka-spec`` beside the repository (or ``$MOCKBROKER_KAFKA_SPEC``)
and from the repository's own overlay, ``tools/protogen/spec-overlay/``, which counts as the newest
tree: JSON files named and shaped like Kafka's (e.g. the stable share-group APIs of Kafka 4.1+ that
the shared trees lack) and an ``errors.tsv`` whose rows are merged after the shared ``errors.tsv``
(same columns; a row replaces the shared one with its code).  For each (message, version) the
newest spec tree that defines the version wins, so an overlay file defines only the versions it
adds or corrects (its ``validVersions``); the older versions still come from the shared trees.
Without the shared specs there is nothing to generate or check (the overlay alone is not enough).
The output is committed, so users of mockbroker never need the specs.  Output is deterministic:
the same specs give the same bytes.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent / "protogen"))

from emit_module import all_outputs
from spec import OVERLAY_DIR, error_tables, load_messages

ROOT = Path(__file__).resolve().parent.parent
OUT_DIR = ROOT / "mockbroker" / "protocol"


def spec_root() -> Path:
    env = os.environ.get("MOCKBROKER_KAFKA_SPEC")
    return Path(env) if env else ROOT.parent / "shared" / "kafka-spec"


def generate(specs: Path, overlay: Path | None = OVERLAY_DIR) -> dict[str, str]:
    """Every generated file (path relative to mockbroker/protocol -> text) from the shared specs and the overlay."""
    return all_outputs(load_messages(specs, overlay), error_tables(specs, overlay))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="compare with the committed output")
    ap.add_argument("--specs", type=Path, default=None, help="the kafka-spec folder")
    ap.add_argument("--out", type=Path, default=OUT_DIR, help="where to write (default: the package)")
    args = ap.parse_args(argv)
    specs = args.specs or spec_root()
    if not (specs / "kafka-4.3").is_dir():
        print(f"gen_protocol: no specs at {specs}; nothing to generate or check (the output is committed)")
        return 0
    outputs = generate(specs)
    if args.check:
        stale = [rel for rel, text in outputs.items()
                 if not (args.out / rel).is_file() or (args.out / rel).read_text() != text]
        extra = {p.relative_to(args.out).as_posix() for p in (args.out / "generated").glob("*.py")}
        extra -= set(outputs)
        if stale or extra:
            print("gen_protocol: committed codec differs from the specs; run `make generate`:")
            for rel in sorted(stale) + sorted(extra):
                print("   ", rel)
            return 1
        print(f"gen_protocol: {len(outputs)} generated files match the specs")
        return 0
    (args.out / "generated").mkdir(parents=True, exist_ok=True)
    for old in (args.out / "generated").glob("*.py"):
        if old.relative_to(args.out).as_posix() not in outputs:
            old.unlink()
    for rel, text in outputs.items():
        (args.out / rel).write_text(text)
    print(f"gen_protocol: wrote {len(outputs)} files under {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
