"""python -m hvd --check-build [--verbose]: the report of `hvdrun --check-build` (the same
program, installed beside this package), then the frameworks this Python can use hvd with,
as Horovod's report lists them, so a Python user can see what this hvd can run."""

import importlib.metadata
import importlib.util
import os
import shutil
import subprocess
import sys
import sysconfig

# (module, Horovod's name for it, the hvd module that serves it). Found without importing
# them: TensorFlow alone takes seconds to import.
_FRAMEWORKS = [("tensorflow", "TensorFlow", "hvd.tensorflow"), ("torch", "PyTorch", "hvd.torch"),
               ("keras", "Keras", "hvd.keras")]


def _hvdrun():
    beside = os.path.join(sysconfig.get_path("scripts"), "hvdrun")
    return beside if os.access(beside, os.X_OK) else shutil.which("hvdrun")


def _version(module):
    for distribution in (module, "tensorflow-cpu" if module == "tensorflow" else None):
        if distribution is None:
            continue
        try:
            return importlib.metadata.version(distribution)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


def frameworks_report(verbose):
    """Horovod's "Available Frameworks" section for this Python."""
    lines = ["Available Frameworks:"]
    for module, name, served_by in _FRAMEWORKS:
        found = importlib.util.find_spec(module) is not None
        line = f"    [{'X' if found else ' '}] {name}"
        if verbose:
            version = _version(module) if found else None
            line += f" ({version}; {served_by})" if found else f" (not installed in {sys.executable})"
        lines.append(line)
    return "\n".join(lines) + "\n"


def main(argv):
    verbose = any(a in ("--verbose", "-v") for a in argv)
    if "--check-build" not in argv or any(a not in ("--check-build", "--verbose", "-v") for a in argv):
        print("usage: python -m hvd --check-build [--verbose]", file=sys.stderr)
        return 2
    program = _hvdrun()
    if program is None:
        print("hvd: error: hvdrun is not installed beside this package (pip install . installs it)", file=sys.stderr)
        return 2
    report = subprocess.run([program, "--check-build"] + (["--verbose"] if verbose else []), stdout=subprocess.PIPE,
                            text=True)
    sys.stdout.write(report.stdout)
    if report.returncode != 0:
        return report.returncode
    sys.stdout.write("\n" + frameworks_report(verbose))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
