"""The installed package: what pip install . put in the environment."""

import os
import re
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

import hvd
from conftest import clean_env, launch


def run(*command):
    return subprocess.run(command, capture_output=True, text=True, env=clean_env(), timeout=60)


def test_python_m_hvd_check_build_prints_the_report_of_the_hvdrun_installed_beside_it():
    installed = os.path.join(sysconfig.get_path("scripts"), "hvdrun")
    ours = run(sys.executable, "-m", "hvd", "--check-build")
    theirs = run(installed, "--check-build")
    assert ours.returncode == 0 and ours.stdout.startswith(theirs.stdout), ours
    assert "Available Controllers:" in ours.stdout and "[X] TCP" in ours.stdout
    # Then the frameworks, as Horovod's report lists them: this venv has all three.
    # Before, a Python user could not see from it which frameworks hvd would serve.
    assert ours.stdout[len(theirs.stdout):] == ("\nAvailable Frameworks:\n    [X] TensorFlow\n    [X] PyTorch\n"
                                                "    [X] Keras\n"), ours.stdout
    verbose = run(sys.executable, "-m", "hvd", "--check-build", "--verbose")
    assert verbose.returncode == 0 and f"[X] PyTorch ({torch_version()}; hvd.torch)" in verbose.stdout, verbose.stdout


def torch_version():
    import importlib.metadata

    return importlib.metadata.version("torch")


def test_python_m_hvd_with_anything_else_prints_its_usage_and_exits_2():
    wrong = run(sys.executable, "-m", "hvd", "--bogus")
    assert wrong.returncode == 2 and "usage: python -m hvd --check-build [--verbose]" in wrong.stderr


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


def test_horovod_s_build_queries_agree_with_what_check_build_says_was_compiled_in():
    report = run(os.path.join(sysconfig.get_path("scripts"), "hvdrun"), "--check-build", "--verbose").stdout
    operations = report.split("Available Tensor Operations:")[1].split("Available Launchers:")[0]

    def compiled(name):
        return re.search(rf"\] {name}: built with ", operations) is not None

    assert hvd.mpi_built() == compiled("MPI")
    assert hvd.cuda_built() == compiled("CUDA")
    nccl = re.search(r"\] NCCL: built with NCCL (\d+)\.(\d+)\.(\d+)", operations)
    expected = int(nccl.group(1)) * 10000 + int(nccl.group(2)) * 100 + int(nccl.group(3)) if nccl else 0
    assert hvd.nccl_built() == expected
    for absent in (hvd.gloo_built, hvd.rocm_built, hvd.ddl_built, hvd.ccl_built, hvd.gloo_enabled):
        assert absent() is False
    import hvd.torch as hvd_torch  # the frameworks' modules re-export them

    assert hvd_torch.nccl_built() == expected and hvd_torch.mpi_built() == hvd.mpi_built()


def test_mpi_enabled_and_mpi_threads_supported_follow_the_job_s_cpu_operations_as_in_horovod():
    plain = launch(2, "build_queries.py")
    assert plain.returncode == 0, plain
    assert plain.lines(0)[0].startswith("enabled=False threads=ValueError: hvd's MPI is not enabled"), plain
    if not hvd.mpi_built():
        pytest.skip("hvd was built without MPI")
    result = launch(2, "build_queries.py", hvdrun_args=["--mpi"], HOROVOD_CPU_OPERATIONS="mpi")
    assert result.returncode == 0, result
    assert result.lines(0) == ["enabled=True threads=False"] and result.lines(1) == result.lines(0), result
