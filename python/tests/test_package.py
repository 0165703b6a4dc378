"""The installed package: what pip install . put in the environment."""

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import hvd
from conftest import clean_env


def run(*command):
    return subprocess.run(command, capture_output=True, text=True, env=clean_env(), timeout=60)


def test_python_m_hvd_check_build_prints_the_report_of_the_hvdrun_installed_beside_it():
    installed = os.path.join(sysconfig.get_path("scripts"), "hvdrun")
    ours = run(sys.executable, "-m", "hvd", "--check-build")
    theirs = run(installed, "--check-build")
    assert ours.returncode == 0 and ours.stdout == theirs.stdout
    assert "Available Controllers:" in ours.stdout and "[X] TCP" in ours.stdout


def test_python_m_hvd_with_anything_else_prints_its_usage_and_exits_2():
    wrong = run(sys.executable, "-m", "hvd", "--bogus")
    assert wrong.returncode == 2 and "usage: python -m hvd --check-build" in wrong.stderr


def test_the_package_carries_its_type_stubs_and_finds_libhvd_beside_itself():
    package = Path(hvd.__file__).parent
    stub = (package / "_hvd.pyi").read_text()
    for name in ("def allreduce_async(", "def allreduce_(tensor", "def synchronize(", "class ReduceOp("):
        assert name in stub
    assert (package / "py.typed").exists()
    env = clean_env()
    env.pop("LD_LIBRARY_PATH", None)
    completed = subprocess.run([sys.executable, "-c", "import hvd; hvd.init(); print(hvd.size())"],
                               capture_output=True, text=True, env=env, timeout=60)
    assert completed.returncode == 0 and completed.stdout.strip() == "1", completed.stderr
