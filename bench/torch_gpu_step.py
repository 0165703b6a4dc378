"""bench/torch_gpu_step.py: a training step's backward on a GPU with a hook per gradient that
hands it to hvd (a named async allreduce_, as a DistributedOptimizer does), ms per step, beside
the same backward without hvd ("plain") and with torch's stream synchronized in each hook
before the hand-over ("sync": what hvd's Python layer did for every CUDA tensor before
2026-11-27, which holds the CPU until every kernel queued so far has run). The model: --layers
Linear(--width, --width) + ReLU, a batch of --batch rows. Each variant runs --steps steps after
3 untimed, twice, interleaved. Run under hvdrun on a GPU machine; rank 0 prints; asserts nothing.
    hvdrun -np 1 python bench/torch_gpu_step.py [--layers 48] [--width 1024] [--batch 256] [--steps 30]
"""

import argparse
import time

import torch

import hvd.torch as hvd


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=48)
    parser.add_argument("--width", type=int, default=1024)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--steps", type=int, default=30)
    args = parser.parse_args()
    hvd.init()
    device = torch.device("cuda", hvd.local_rank() % torch.cuda.device_count())
    torch.cuda.set_device(device)
    torch.manual_seed(0)
    blocks = [m for _ in range(args.layers) for m in (torch.nn.Linear(args.width, args.width), torch.nn.ReLU())]
    model = torch.nn.Sequential(*blocks).to(device)
    x = torch.randn(args.batch, args.width, device=device)
    variant = {"now": "plain"}
    handles = []

    def hook_for(name):
        def hook(grad):
            if variant["now"] == "plain":
                return grad
            if variant["now"] == "sync":
                torch.cuda.current_stream(device).synchronize()
            handles.append(hvd.allreduce_async_(grad, op=hvd.Average, name=name))
            return grad

        return hook

    for name, p in model.named_parameters():
        p.register_hook(hook_for(name))

    def step():
        model.zero_grad(set_to_none=True)
        model(x).square().mean().backward()
        for h in handles:
            hvd.synchronize(h)
        handles.clear()

    gradients = len(list(model.parameters()))
    for name in ("plain", "hvd", "sync") * 2:
        variant["now"] = name
        for _ in range(3):
            step()
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(args.steps):
            step()
        torch.cuda.synchronize()
        if hvd.rank() == 0:
            ms = (time.perf_counter() - start) / args.steps * 1e3
            print(f"{name:6s} {ms:8.2f} ms a step ({gradients} gradients, {hvd.size()} rank(s), "
                  f"{hvd.gpu_operations_backend()})", flush=True)
    hvd.shutdown()


if __name__ == "__main__":
    main()
