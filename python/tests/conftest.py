"""Shared set-up of the Python tests: ranks are real processes that hvdrun starts, running
the installed hvd package (scripts/setup.sh installs it into .venv) and real frameworks.

HVD_HVDRUN names the hvdrun to launch with (CTest passes build/cli/hvdrun); by default the
one installed beside the package. Every launch runs outside any Slurm job and GPU set-up of
the calling shell, with a short HVD_TIMEOUT so a failure is fast, never a hang.
"""

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

RANKS = Path(__file__).parent / "ranks"
SOURCE_DIR = Path(__file__).resolve().parents[2]


def hvdrun_path():
    return os.environ.get("HVD_HVDRUN") or os.path.join(sysconfig.get_path("scripts"), "hvdrun")


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "HVD_", "HOROVOD_", "OMPI_", "PMIX_"))}
    env.pop("CUDA_VISIBLE_DEVICES", None)
    env["SLURM_CONF"] = "/nonexistent"
    env["HVD_TIMEOUT"] = "20"
    env.update({k: str(v) for k, v in extra.items()})
    return env


class Launch:
    """What one hvdrun run printed and how it ended."""

    def __init__(self, completed):
        self.returncode = completed.returncode
        self.stdout = completed.stdout
        self.stderr = completed.stderr

    def lines(self, rank):
        prefix = f"[{rank}]<stdout>:"
        return [line[len(prefix):] for line in self.stdout.splitlines() if line.startswith(prefix)]

    def __repr__(self):
        return f"exit {self.returncode}\n--- stdout\n{self.stdout}\n--- stderr\n{self.stderr}"


def launch(np, script, *args, hvdrun_args=(), timeout=240, **env):
    """Runs `hvdrun -np NP python RANKS/script args...` and returns a Launch."""
    command = [hvdrun_path(), "-np", str(np), *hvdrun_args, sys.executable, str(RANKS / script), *map(str, args)]
    completed = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=clean_env(**env))
    return Launch(completed)


def run_all_ranks_ok(np, script, *args, hvdrun_args=(), **env):
    """Launches and asserts that every rank printed 'ok' and the job exited 0."""
    result = launch(np, script, *args, hvdrun_args=hvdrun_args, **env)
    assert result.returncode == 0, result
    for rank in range(np):
        assert "ok" in result.lines(rank), f"rank {rank} did not finish\n{result}"
    return result


@pytest.fixture(autouse=True)
def _no_stray_environment(monkeypatch):
    monkeypatch.setenv("SLURM_CONF", "/nonexistent")
