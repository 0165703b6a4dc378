"""bench/peers/horovod_torch_digits.py: examples/python/torch_digits.py run by Horovod 0.28.1
itself, unchanged but for the import: `hvd.torch` is Horovod's horovod.torch here (the two
share the API the example uses). Run with horovodrun in Horovod's venv
(bench/run_python_bench.sh does)."""

import runpy
import sys
import types
from pathlib import Path

import horovod.torch

examples = Path(__file__).resolve().parents[2] / "examples" / "python"
sys.path.insert(0, str(examples))
package = types.ModuleType("hvd")
package.torch = horovod.torch
sys.modules["hvd"] = package
sys.modules["hvd.torch"] = horovod.torch
sys.argv[0] = str(examples / "torch_digits.py")
runpy.run_path(sys.argv[0], run_name="__main__")
