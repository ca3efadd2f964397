"""The kernels import without pyspark and without the rules."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import tablestream

_SCRIPT = """
import importlib, json, pkgutil, sys
sys.modules["pyspark"] = None
import tablestream.runtime.kernels as kernels
names = [m.name for m in pkgutil.walk_packages(kernels.__path__, kernels.__name__ + ".")]
for name in names:
    importlib.import_module(name)
print(json.dumps({"imported": names, "loaded": sorted(sys.modules)}))
"""


def test_every_kernel_module_imports_without_pyspark_or_the_rules():
    """With pyspark made unimportable, every module of the kernels package imports, and
    no module of the rules is loaded."""
    source = str(Path(tablestream.__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [source, os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, "-c", _SCRIPT], capture_output=True, text=True, env=env, check=False)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    prefix = "tablestream.runtime.kernels."
    assert {n.removeprefix(prefix) for n in report["imported"]} >= {
        "order", "codec", "upsert", "numeric", "extreme", "fold", "table_join", "stream_table",
        "foreign_key", "foreign_key.shuffled", "foreign_key.replicated", "foreign_key.subscriptions",
    }
    assert [n for n in report["loaded"] if n == "tablestream.runtime.rules" or n.startswith("tablestream.runtime.rules.")] == []
    assert [n for n in report["loaded"] if n == "pyspark" or n.startswith("pyspark.")] == ["pyspark"]
