"""Rank side of test_package.py: prints "enabled=<mpi_enabled()> threads=<mpi_threads_supported()>"
(or the ValueError it raises), Horovod's runtime queries about MPI."""

import hvd

hvd.init()
try:
    threads = hvd.mpi_threads_supported()
except ValueError as error:
    threads = f"ValueError: {error}"
print(f"enabled={hvd.mpi_enabled()} threads={threads}", flush=True)
