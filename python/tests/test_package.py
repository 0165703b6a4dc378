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


def versions_of(*distributions):
    import importlib.metadata

    found = {}
    for name in distributions:
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            pass
    return found


def frameworks_section(report):
    return report.split("Available Frameworks:\n")[1].split("\n\n")[0].splitlines()


def test_check_build_lists_first_the_frameworks_this_venv_serves_in_horovodrun_s_layout():
    installed = os.path.join(sysconfig.get_path("scripts"), "hvdrun")
    env = clean_env()
    env["VIRTUAL_ENV"] = sys.prefix
    plain = subprocess.run([installed, "--check-build"], capture_output=True, text=True, env=env, timeout=60)
    assert plain.returncode == 0 and plain.stdout.startswith("hvdrun v"), plain
    assert plain.stdout.split("\n")[2] == "Available Frameworks:", plain.stdout
    have = versions_of("tensorflow-cpu", "tensorflow", "torch", "keras")
    expected = [f"    [{'X' if have.get(d) or have.get(alt) else ' '}] {name}"
                for name, d, alt in (("TensorFlow", "tensorflow", "tensorflow-cpu"), ("PyTorch", "torch", "torch"),
                                     ("Keras", "keras", "keras"))]
    assert frameworks_section(plain.stdout) == expected, plain.stdout
    verbose = subprocess.run([installed, "--check-build", "-v"], capture_output=True, text=True, env=env, timeout=60)
    lines = frameworks_section(verbose.stdout)
    python = os.path.join(sys.prefix, "bin", "python3")
    assert lines[0] == (f"    (the Python ranks run: {python} ({sys.version.split()[0]}), "
                        f"hvd from {os.path.dirname(os.path.dirname(hvd.__file__))})"), lines
    assert f"    [X] PyTorch: torch {have['torch']} through hvd.torch" in lines, lines
    tensorflow = next((f"{d} {have[d]}" for d in ("tensorflow", "tensorflow-cpu") if d in have), None)
    if tensorflow:
        assert f"    [X] TensorFlow: {tensorflow} through hvd.tensorflow" in lines, lines
    # The libraries that run on PyTorch: under -v only, with the version installed or why not.
    libraries = versions_of("pytorch-lightning", "lightning", "accelerate")
    lightning = next((f"{d} {libraries[d]}" for d in ("lightning", "pytorch-lightning") if d in libraries), None)
    assert (f"    [X] PyTorch Lightning: {lightning}" if lightning else
            f"    [ ] PyTorch Lightning: not installed in {python}") in lines, lines
    accelerate = libraries.get("accelerate")
    assert (f"    [X] Accelerate: accelerate {accelerate}" if accelerate else
            f"    [ ] Accelerate: not installed in {python}") in lines, lines


def test_python_m_hvd_check_build_is_hvdrun_s_report_for_the_python_that_runs_it():
    installed = os.path.join(sysconfig.get_path("scripts"), "hvdrun")
    env = clean_env()
    env["VIRTUAL_ENV"] = sys.prefix
    theirs = subprocess.run([installed, "--check-build"], capture_output=True, text=True, env=env, timeout=60)
    # Without VIRTUAL_ENV, and with PATH's python3 another one: python -m hvd still asks this one.
    env.pop("VIRTUAL_ENV")
    ours = subprocess.run([sys.executable, "-m", "hvd", "--check-build"], capture_output=True, text=True, env=env,
                          timeout=60)
    assert ours.returncode == 0 and ours.stdout == theirs.stdout, ours
    assert "Available Controllers:" in ours.stdout and "[X] TCP" in ours.stdout
    assert "[X] PyTorch" in ours.stdout


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
