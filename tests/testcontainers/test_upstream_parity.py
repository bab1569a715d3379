"""test_kafka_module.py is testcontainers-python's own Kafka module tests but for the import lines.

Read from the mirror of testcontainers-python (the blobs named in test_kafka_module.py's docstring); skipped,
saying why, where the mirror or git is absent.  Compared as syntax trees: every upstream function is in our
module as written, our module defines nothing else, and its imports are upstream's with every name
imported from ``testcontainers.*`` imported from ``mockbroker.testcontainers`` instead.
"""

from __future__ import annotations

import ast
import shutil
import subprocess
from pathlib import Path

import pytest

import mockbroker.testcontainers

MIRROR = Path("/work/.mirror/testcontainers+testcontainers-python/repo")
UPSTREAM = {  # path in testcontainers-python -> the git blob test_kafka_module.py was written from
    "tests/community/kafka/test_kafka.py": "4bec6950f4ac05d1717f63fa4d5000f19237b178",
    "tests/community/kafka/test_redpanda.py": "385f98713e29e422a59ba9942dd75735d5192505",
}
OURS = Path(__file__).with_name("test_kafka_module.py")


def _upstream(blob: str) -> str:
    if shutil.which("git") is None:
        pytest.skip("git is not installed: cannot read testcontainers-python's tests")
    if not MIRROR.is_dir():
        pytest.skip(f"no mirror of testcontainers-python at {MIRROR}: nothing to compare with")
    done = subprocess.run(["git", "-C", str(MIRROR), "cat-file", "-p", blob], capture_output=True, text=True,
                          timeout=30, check=False)
    if done.returncode != 0:
        pytest.skip(f"blob {blob} is not in the mirror at {MIRROR}: {done.stderr.strip()}")
    return done.stdout


def _imports(tree: ast.Module) -> set[tuple[str, str, str | None]]:
    """(module, name, alias) of every top-level import."""
    found: set[tuple[str, str, str | None]] = set()
    for node in tree.body:
        if isinstance(node, ast.Import):
            found |= {(alias.name, "", alias.asname) for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            found |= {(node.module or "", alias.name, alias.asname) for alias in node.names}
    return found


def _definitions(tree: ast.Module) -> dict[str, str]:
    return {node.name: ast.dump(node) for node in tree.body
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}


def _other_statements(tree: ast.Module) -> list[str]:
    """Top-level statements that are neither imports, definitions nor the module docstring."""
    body = tree.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    kinds = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    return [ast.unparse(node) for node in body if not isinstance(node, kinds)]


def test_only_the_imports_differ_from_testcontainers_tests() -> None:
    ours = ast.parse(OURS.read_text(encoding="utf-8"))
    upstream = [ast.parse(_upstream(blob), path) for path, blob in UPSTREAM.items()]
    our_definitions = _definitions(ours)
    upstream_definitions: dict[str, str] = {}
    for tree in upstream:
        upstream_definitions.update(_definitions(tree))
    assert our_definitions == upstream_definitions
    assert _other_statements(ours) == [] and all(_other_statements(tree) == [] for tree in upstream)

    expected: set[tuple[str, str, str | None]] = set()
    for tree in upstream:
        for module, name, alias in _imports(tree):
            renamed = module == "testcontainers" or module.startswith("testcontainers.")
            expected.add(("mockbroker.testcontainers", name, alias) if renamed else (module, name, alias))
    assert _imports(ours) == expected
    served = {name for module, name, _ in expected if module == "mockbroker.testcontainers"}
    assert served == {"KafkaContainer", "RedpandaContainer", "Network", "kafka_config"}
    assert served <= set(mockbroker.testcontainers.__all__)

