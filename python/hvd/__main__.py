"""python -m hvd --check-build: the report of `hvdrun --check-build` (the same program,
installed beside this package), so a Python user can see what this hvd can run."""

import os
import shutil
import sys
import sysconfig


def _hvdrun():
    beside = os.path.join(sysconfig.get_path("scripts"), "hvdrun")
    return beside if os.access(beside, os.X_OK) else shutil.which("hvdrun")


def main(argv):
    if argv != ["--check-build"]:
        print("usage: python -m hvd --check-build", file=sys.stderr)
        return 2
    program = _hvdrun()
    if program is None:
        print("hvd: error: hvdrun is not installed beside this package (pip install . installs it)", file=sys.stderr)
        return 2
    os.execv(program, [program, "--check-build"])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
