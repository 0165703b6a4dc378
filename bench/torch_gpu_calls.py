"""bench/torch_gpu_calls.py: hvd.torch's collectives on CUDA tensors from Python, microseconds
a call, beside what the same bytes cost on the GPU alone (x.clone()) and through host
memory and back (x.cpu().to(device): what a result handed over in host memory costs).
Run under hvdrun on a GPU machine (one rank: NCCL; HOROVOD_GPU_OPERATIONS=cpu: the staged
path). Each figure is the mean of --iters calls after one untimed, float32, the device
synchronized before and after the loop. Rank 0 prints; asserts nothing.
    hvdrun -np 1 python bench/torch_gpu_calls.py [--sizes-mib 1,16,64] [--iters 20]
"""

import argparse
import time

import torch

import hvd.torch as hvd


def per_call_us(fn, iters):
    fn()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(iters):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / iters * 1e6


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes-mib", default="1,16,64")
    parser.add_argument("--iters", type=int, default=20)
    args = parser.parse_args()
    hvd.init()
    device = torch.device("cuda", hvd.local_rank() % torch.cuda.device_count())
    torch.cuda.set_device(device)
    if hvd.rank() == 0:
        print(f"# backend {hvd.gpu_operations_backend()}, {hvd.size()} rank(s), {torch.cuda.get_device_name(device)}")
        print(f"# {'MiB':>5} {'allreduce_':>11} {'allreduce':>10} {'allgather':>10} {'alltoall':>10} "
              f"{'broadcast_':>11} {'clone':>8} {'cpu+back':>10}  (us a call)")
    for mib in (float(s) for s in args.sizes_mib.split(",")):
        x = torch.ones(int(mib * (1 << 20)) // 4, device=device)
        row = [
            per_call_us(lambda: hvd.allreduce_(x, op=hvd.Sum), args.iters),
            per_call_us(lambda: hvd.allreduce(x, op=hvd.Sum), args.iters),
            per_call_us(lambda: hvd.allgather(x), args.iters),
            per_call_us(lambda: hvd.alltoall(x), args.iters),
            per_call_us(lambda: hvd.broadcast_(x, root_rank=0), args.iters),
            per_call_us(lambda: x.clone(), args.iters),
            per_call_us(lambda: x.cpu().to(device), args.iters),
        ]
        if hvd.rank() == 0:
            print(f"  {mib:5g} " + " ".join(f"{v:{w}.1f}" for v, w in zip(row, (11, 10, 10, 10, 11, 8, 10))), flush=True)
    hvd.shutdown()


if __name__ == "__main__":
    main()
