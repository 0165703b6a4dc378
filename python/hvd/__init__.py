"""hvd: hvdrun's collective runtime for Python.

    import hvd
    hvd.init()
    x = hvd.allreduce(numpy_or_torch_array)         # averaged across ranks

Names follow Horovod's, so `import horovod.torch as hvd` ports by changing the import
(the PyTorch parts are in hvd.torch). Run under hvdrun (`hvdrun -np 4 python train.py`),
mpirun or srun --mpi=pmix; alone, hvd is a world of one rank. docs/python.md has the rest.
"""

import atexit as _atexit
import os as _os

from . import _hvd, _process_sets
from ._hvd import (
    HvdError,
    HvdInvalidArgumentError,
    HvdPeerError,
    HvdTimeoutError,
    HvdUnavailableError,
    HvdUsageError,
    ReduceOp,
)
from ._ops import (
    Adasum,
    Average,
    Max,
    Min,
    Product,
    Sum,
    allgather,
    allgather_async,
    allgather_object,
    allreduce,
    allreduce_,
    allreduce_async,
    allreduce_async_,
    alltoall,
    alltoall_async,
    barrier,
    broadcast,
    broadcast_,
    broadcast_async,
    broadcast_async_,
    broadcast_object,
    join,
    poll,
    reducescatter,
    reducescatter_async,
    synchronize,
)
from ._process_sets import ProcessSet, add_process_set, global_process_set, remove_process_set

__version__ = "0.1.0"

# Horovod's name for the error elastic training catches; code that catches it keeps working.
HorovodInternalError = HvdError


def init(comm=None, process_sets=None):
    """Joins the job (hvdrun, mpirun or srun --mpi=pmix); alone, a world of one. Idempotent
    while the runtime runs; after a peer shut down or failed (the runtime stopped), init()
    rejoins the job, as shutdown() then init() do. process_sets (Horovod's): ProcessSets (or
    lists of ranks) to add now, in order, on every rank, or "dynamic" (Horovod's switch for
    adding sets later, which hvd always allows). comm (Horovod's MPI communicator) is taken
    only as None."""
    if comm is not None:
        raise ValueError("hvd: init(comm=...) takes no MPI communicator here; hvd joins the job hvdrun, mpirun or "
                         "srun started (use process_sets= for subsets of its ranks)")
    if isinstance(process_sets, str):
        if process_sets != "dynamic":
            raise ValueError(f"hvd: init(process_sets={process_sets!r}): give a list of ProcessSets, or \"dynamic\"")
        process_sets = None  # hvd.add_process_set works after init in every job
    if _hvd.stopped():
        shutdown()  # the stopped runtime's process sets end with it; init rejoins below
    first = not _hvd.is_initialized()
    _hvd.init()
    if first:
        _process_sets._started(process_sets)
    elif process_sets:
        raise ValueError("hvd: init(process_sets=...) after init: add them with hvd.add_process_set")


def shutdown():
    """Stops the engine on every rank and leaves the job. Idempotent; also run at exit."""
    global _shut_down
    _shut_down = _hvd.is_initialized() or _shut_down
    _hvd.shutdown()
    _process_sets._stopped()


_shut_down = False  # shutdown() ended a runtime: said in the errors of later calls


# Before the interpreter frees the arrays an async request may still be writing into.
_atexit.register(_hvd.shutdown)


def is_initialized():
    return _hvd.is_initialized()


def _initialized():
    if not _hvd.is_initialized():
        if _shut_down:
            raise ValueError("hvd was shut down (hvd.shutdown()) before this call; call hvd.init() again to rejoin")
        raise ValueError("hvd has not been initialized; call hvd.init() first")


def rank():
    """This process's rank in the job, 0 .. size()-1."""
    _initialized()
    return _hvd.rank()


def size():
    _initialized()
    return _hvd.size()


def local_rank():
    """This process's rank among the ranks on its host: the index of its GPU, say."""
    _initialized()
    return _hvd.local_rank()


def local_size():
    _initialized()
    return _hvd.local_size()


def cross_rank():
    """The index of this rank's host among the job's hosts."""
    _initialized()
    return _hvd.cross_rank()


def cross_size():
    _initialized()
    return _hvd.cross_size()


def is_homogeneous():
    """Horovod's: whether every host runs as many ranks (learnt once, at init)."""
    _initialized()
    return _hvd.is_homogeneous()


def start_timeline(file_path, mark_cycles=False):
    """Horovod's: this rank's Chrome trace from now on (rank 0 writes file_path, rank r the
    same name with .rank<r> before the extension; `hvdrun timeline merge` joins them), with
    CYCLE_START marks if asked. Each rank starts its own; another file while one is being
    written raises HvdUsageError (stop_timeline() first)."""
    _initialized()
    path = _os.fspath(file_path)
    if not path:
        raise ValueError("start_timeline: the file path is empty")  # abspath would make it the directory
    _hvd.start_timeline(_os.path.abspath(path), bool(mark_cycles))


def stop_timeline():
    """Writes and closes this rank's timeline; nothing without one."""
    _initialized()
    _hvd.stop_timeline()


def operations_backend():
    """What moves CPU data: "tcp" (hvd's ring over shared memory and TCP) or "mpi"."""
    return _hvd.operations_backend()


def gpu_operations_backend():
    """What moves GPU tensors: "nccl", "cuda-staged" (HOROVOD_GPU_OPERATIONS=cpu, or no
    NCCL) or "none" (no GPU here: a GPU tensor's collective raises, saying why)."""
    return _hvd.gpu_operations_backend()


# Horovod's build and runtime queries, for the scripts that ask them (`if hvd.nccl_built():`).
# Built means compiled in, not usable here: `hvdrun --check-build` tells that.


def mpi_built():
    """True when hvd can hand CPU data to Open MPI (HOROVOD_CPU_OPERATIONS=mpi)."""
    return _hvd.built("mpi")


def nccl_built():
    """NCCL_VERSION_CODE of the nccl.h hvd was compiled against (2.28.9: 22809); 0 without NCCL."""
    return _hvd.nccl_built_version()


def cuda_built():
    """True when hvd takes GPU tensors (the CUDA path, loaded when the job runs)."""
    return _hvd.built("cuda")


def gloo_built():
    """False: hvd's own ring (shared memory and TCP) stands where Horovod has Gloo."""
    return False


def rocm_built():
    return False


def ddl_built():
    return False


def ccl_built():
    return False


def mpi_enabled():
    """True when this job's CPU data goes through MPI (HOROVOD_CPU_OPERATIONS=mpi)."""
    return _hvd.is_initialized() and _hvd.operations_backend() == "mpi"


def gloo_enabled():
    return False


def mpi_threads_supported():
    """Whether other threads may call MPI beside hvd (mpi4py, say): False, since hvd asks MPI
    for MPI_THREAD_SERIALIZED. As in Horovod, ValueError when MPI is not enabled."""
    _initialized()
    if not mpi_enabled():
        raise ValueError("hvd's MPI is not enabled: this job's CPU operations are "
                         f"{_hvd.operations_backend()!r} (HOROVOD_CPU_OPERATIONS=mpi, under mpirun, enables it)")
    return False


def set_gpu_stream(stream):
    """Runs later GPU collectives on this CUDA stream (torch: torch.cuda.current_stream().cuda_stream;
    0: hvd's own stream, the default). Call it with no GPU collective pending."""
    _initialized()
    _hvd.set_gpu_stream(int(stream))


def preemption_requested():
    """True once hvdrun told this rank the job is about to end (--signal, --requeue). Local."""
    return _hvd.preemption_requested()


def preemption_agreed():
    """Collective: True on every rank when any rank has seen preemption."""
    return _hvd.preemption_agreed()
