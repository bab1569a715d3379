"""mockbroker.testcontainers against testcontainers-python's source: every public method and constructor argument of
their KafkaContainer, RedpandaContainer, DockerContainer and Network is ours too, and test_kafka_module.py uses only
names their module has (so it runs against testcontainers with its import line put back).

Their source is read from the mirror of testcontainers-python (the fetch tool's copy); skipped, saying why, where
the mirror or git is absent.  Parsed, never imported (it needs Docker's client libraries).
"""

from __future__ import annotations

import ast
import inspect
import shutil
import subprocess
from pathlib import Path

import pytest

import mockbroker.testcontainers as ours
from mockbroker.testcontainers.container import InProcessContainer

MIRROR = Path("/work/.mirror/testcontainers+testcontainers-python/repo")
SOURCES = {"kafka": "src/testcontainers/community/kafka/__init__.py",
           "redpanda": "src/testcontainers/community/kafka/_redpanda.py",
           "container": "src/testcontainers/core/container.py",
           "network": "src/testcontainers/core/network.py"}
MODULE_TEST = Path(__file__).with_name("test_kafka_module.py")


def _source(name: str) -> ast.Module:
    if shutil.which("git") is None:
        pytest.skip("git is not installed: cannot read testcontainers-python's source")
    if not MIRROR.is_dir():
        pytest.skip(f"no mirror of testcontainers-python at {MIRROR}: nothing to compare with")
    done = subprocess.run(["git", "-C", str(MIRROR), "show", f"HEAD:{SOURCES[name]}"], capture_output=True,
                          text=True, timeout=30, check=False)
    if done.returncode != 0:
        pytest.skip(f"{SOURCES[name]} is not in the mirror: {done.stderr.strip()}")
    return ast.parse(done.stdout)


def _class(tree: ast.Module, name: str) -> ast.ClassDef:
    return next(node for node in tree.body if isinstance(node, ast.ClassDef) and node.name == name)


def _public(cls: ast.ClassDef) -> set[str]:
    """Public methods and properties, and the attributes __init__ sets."""
    names = {node.name for node in cls.body if isinstance(node, ast.FunctionDef) and not node.name.startswith("_")}
    for node in cls.body:
        if isinstance(node, ast.FunctionDef) and node.name == "__init__":
            for target in ast.walk(node):
                if (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)
                        and target.value.id == "self" and isinstance(target.ctx, ast.Store)
                        and not target.attr.startswith("_")):
                    names.add(target.attr)
    return names


def _arguments(cls: ast.ClassDef) -> list[str]:
    init = next(node for node in cls.body if isinstance(node, ast.FunctionDef) and node.name == "__init__")
    return [arg.arg for arg in init.args.args[1:] + init.args.kwonlyargs]


@pytest.mark.parametrize(("source", "theirs", "mine"), [
    ("kafka", "KafkaContainer", ours.KafkaContainer),
    ("redpanda", "RedpandaContainer", ours.RedpandaContainer),
    ("container", "DockerContainer", ours.KafkaContainer),
    ("container", "DockerContainer", ours.RedpandaContainer),
    ("network", "Network", ours.Network),
])
def test_every_public_method_and_argument_is_ours_too(source: str, theirs: str, mine: type) -> None:
    cls = _class(_source(source), theirs)
    missing = sorted(name for name in _public(cls) if not hasattr(mine, name) and name not in vars(_instance(mine)))
    assert not missing, f"{mine.__name__} lacks {theirs}'s {missing}"
    # DockerContainer's own arguments reach our base class through the subclasses' **kwargs
    target = InProcessContainer if theirs == "DockerContainer" else mine
    accepted = inspect.signature(target.__init__).parameters
    absent = [name for name in _arguments(cls) if name not in accepted]
    assert not absent, f"{target.__name__}() does not take {theirs}'s {absent}"


def _instance(cls: type) -> object:
    return cls()


def test_the_module_test_uses_only_testcontainers_names() -> None:
    tree = ast.parse(MODULE_TEST.read_text(encoding="utf-8"))
    imported = {alias.name for node in tree.body if isinstance(node, ast.ImportFrom)
                and node.module == "mockbroker.testcontainers" for alias in node.names}
    assert imported == {"KafkaContainer", "RedpandaContainer", "Network", "kafka_config"}
    mentions = [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))
                and "mockbroker" in (getattr(n, "module", None) or "".join(a.name for a in n.names))]
    assert len(mentions) == 1  # the one import line a user changes
    kafka_module = _source("kafka")
    exported = {elt.value for node in kafka_module.body if isinstance(node, ast.Assign)
                for target in node.targets if isinstance(target, ast.Name) and target.id == "__all__"
                for elt in node.value.elts if isinstance(elt, ast.Constant)}  # type: ignore[attr-defined]
    assert imported - {"Network"} <= exported
    assert any(isinstance(n, ast.ClassDef) and n.name == "Network" for n in _source("network").body)
    known = (_public(_class(_source("kafka"), "KafkaContainer")) | _public(_class(_source("redpanda"),
             "RedpandaContainer")) | _public(_class(_source("container"), "DockerContainer"))
             | _public(_class(_source("network"), "Network")) | {"limit_broker_to_first_host"})
    used = {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name) and node.value.id in ("kafka", "redpanda", "network", "kafka_config")}
    assert used and used <= known, sorted(used - known)
