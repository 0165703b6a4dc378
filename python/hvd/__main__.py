"""python -m hvd --check-build [--verbose]: the report of `hvdrun --check-build` (the same
program, installed beside this package) for this Python. hvdrun lists the frameworks of the
Python a rank would run ($VIRTUAL_ENV's, else python3 on PATH); this entry point points it at
the interpreter that runs it, so a Python user sees what this hvd can serve here."""

import os
import shutil
import subprocess
import sys
import sysconfig


def _hvdrun():
    beside = os.path.join(sysconfig.get_path("scripts"), "hvdrun")
    return beside if os.access(beside, os.X_OK) else shutil.which("hvdrun")


def _environment_for_this_python():
    env = dict(os.environ)
    if sys.prefix != sys.base_prefix:
        env["VIRTUAL_ENV"] = sys.prefix
    else:
        # Not a virtual environment: python3 on PATH must be this one.
        env.pop("VIRTUAL_ENV", None)
        env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    return env


def main(argv):
    verbose = any(a in ("--verbose", "-v") for a in argv)
    if "--check-build" not in argv or any(a not in ("--check-build", "--verbose", "-v") for a in argv):
        print("usage: python -m hvd --check-build [--verbose]", file=sys.stderr)
        return 2
    program = _hvdrun()
    if program is None:
        print("hvd: error: hvdrun is not installed beside this package (pip install . installs it)", file=sys.stderr)
        return 2
    report = subprocess.run([program, "--check-build"] + (["--verbose"] if verbose else []),
                            env=_environment_for_this_python())
    return report.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
