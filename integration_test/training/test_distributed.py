"""Data-parallel training through attnfuse's torch modules, on the CPU.

Two processes (gloo, MASTER_ADDR 127.0.0.1 and a free port) train a tiny
model whose attention is attnfuse.torch.QKVAttention (K=V sharing, GQA) or
attnfuse.torch.CCAAttention (CCGQA, RoPE on half of each head) for STEPS
steps, each process on its half of the global batch, under
DistributedDataParallel or FSDP2 (torch.distributed.fsdp.fully_shard). The
parameters they end with must be those of ONE process training on the whole
global batch from the same initialization, on the same data: gradient
averaging over ranks equals the gradient of the global batch's mean loss
when the ranks hold equal shares. Gradients flow through the layers'
custom ops (their `_vjp` gradient ops) into every parameter and into the
layer's input (a projection precedes the attention).

The comparison is not vacuous: the parameters move by far more than the
tolerance, and training on one rank's half alone ends elsewhere.

Tolerance: TOLERANCE = 1e-5, absolute, on every parameter and on the
losses (f32; the parameters are O(0.1)). What differs between the runs is
only the order of the f32 sums over the batch (two per-rank sums and their
all-reduce or reduce-scatter against one sum): gradient differences up to
6e-9 on gradients up to 4e-2. SGD carries them over linearly; Adam's first
step, lr * g / (|g| + eps), multiplies them by up to lr / eps (elements
whose gradient is near zero), so Adam runs with lr / eps = 1e3. Measured
(torch 2.15, x86_64): parameters within 1.5e-8 (SGD) and 4.5e-8 (Adam) of
the single process, losses within 1.8e-7.

Both ranks are subprocesses of this file (`--worker`), one torch thread
and OMP_NUM_THREADS=1 each, that run every case in turn in one process
group, so each compiles each layer once; the single-process runs are this
process's. The ranks have a deadline (WORKER_TIMEOUT_S) and the process
group's collectives a timeout; when one rank fails, the other is killed
and every case fails with both ranks' output.
"""

import argparse
import datetime
import os
import socket
import subprocess
import sys
import time

import pytest

from attnfuse_package import require_package_dir

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

E, HEADS, KV_HEADS, HEAD_DIM = 32, 4, 2, 8
SEQ, GLOBAL_BATCH, WORLD, STEPS = 8, 4, 2, 3
TOLERANCE = 1e-5
WORKER_TIMEOUT_S = 180  # 35 to 44 s measured on 2 busy cores
COLLECTIVE_TIMEOUT_S = 60

# id: (attention, optimizer, data-parallel wrapper)
CASES = {
    "ddp-qkv-kv-gqa-sgd": ("qkv", "sgd", "ddp"),
    "ddp-cca-ccgqa-adam": ("cca", "adam", "ddp"),
    "fsdp2-qkv-kv-gqa-adam": ("qkv", "adam", "fsdp2"),
    "fsdp2-cca-ccgqa-sgd": ("cca", "sgd", "fsdp2"),
}


# ---------------------------------------------------------------------------
# The model, the data and the training loop (shared by the workers and the
# single-process reference)
# ---------------------------------------------------------------------------


def make_model(attention):
    """A projection, the attention with a residual, an output projection;
    the same parameters in every process (seeded)."""
    import torch
    from torch import nn

    import attnfuse.torch as at

    class Tiny(nn.Module):
        def __init__(self):
            super().__init__()
            self.inp = nn.Linear(E, E)
            if attention == "qkv":
                self.attention = at.QKVAttention(
                    E, HEADS, num_kv_heads=KV_HEADS, head_dim=HEAD_DIM,
                    sharing="kv", rope_theta=1e4)
            else:
                self.attention = at.CCAAttention(
                    E, HEADS, num_kv_heads=KV_HEADS, head_dim=HEAD_DIM,
                    rope_theta=1e4, rope_fraction=0.5)
            self.out = nn.Linear(E, E)

        def forward(self, x):
            h = self.inp(x)
            a = self.attention(h)
            if isinstance(a, tuple):  # CCAAttention: (output, None)
                a = a[0]
            return self.out(h + a)

    torch.manual_seed(0)
    model = Tiny()
    if attention == "cca":
        with torch.no_grad():  # a nonzero key temperature (default zero)
            model.attention.qk_norm.temp.uniform_(0.5, 1.5)
    return model


def batch(step):
    """The global batch of one step: inputs and targets [GLOBAL_BATCH, SEQ,
    E]."""
    import torch
    generator = torch.Generator().manual_seed(1000 + step)
    x = torch.randn(GLOBAL_BATCH, SEQ, E, generator=generator)
    target = torch.randn(GLOBAL_BATCH, SEQ, E, generator=generator)
    return x, target


def make_optimizer(name, parameters):
    import torch
    if name == "sgd":
        return torch.optim.SGD(parameters, lr=0.1, momentum=0.9)
    # Adam moves an element by lr * g / (|g| + eps) on its first step: a
    # gradient difference dg changes that by up to lr / eps * dg, the most
    # where g is near zero. lr / eps = 1e3 keeps that under the tolerance.
    return torch.optim.Adam(parameters, lr=1e-3, eps=1e-6)


def train(model, optimizer_name, rows):
    """STEPS steps of the mean squared error on rows `rows` (a slice) of
    each global batch; returns the losses."""
    import torch.nn.functional as F
    optimizer = make_optimizer(optimizer_name, model.parameters())
    losses = []
    for step in range(STEPS):
        x, target = batch(step)
        optimizer.zero_grad(set_to_none=True)
        loss = F.mse_loss(model(x[rows]), target[rows])
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def parameters_of(model):
    """{name: full f32 tensor}; FSDP2's sharded DTensors gathered."""
    out = {}
    for name, p in model.named_parameters():
        p = p.detach()
        if hasattr(p, "full_tensor"):
            p = p.full_tensor()
        out[name] = p.clone()
    return out


# ---------------------------------------------------------------------------
# A worker: one rank
# ---------------------------------------------------------------------------


def has_fsdp2():
    import torch.distributed.fsdp as fsdp
    return hasattr(fsdp, "fully_shard")


def worker(out):
    """One rank: every case in turn, in one process group (each layer is
    JIT-compiled once per process); saves rank<r>-<case>.pt in `out`."""
    import torch
    import torch.distributed as dist
    torch.set_num_threads(1)
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    dist.init_process_group(
        "gloo", rank=rank, world_size=world,
        timeout=datetime.timedelta(seconds=COLLECTIVE_TIMEOUT_S))
    try:
        for case, (attention, optimizer, wrapper) in sorted(CASES.items()):
            if wrapper == "fsdp2" and not has_fsdp2():
                continue
            model = make_model(attention)
            if wrapper == "ddp":
                from torch.nn.parallel import DistributedDataParallel
                trained = DistributedDataParallel(model)
            else:
                from torch.distributed.device_mesh import init_device_mesh
                from torch.distributed.fsdp import fully_shard
                mesh = init_device_mesh("cpu", (world,))
                fully_shard(model.attention, mesh=mesh)
                trained = fully_shard(model, mesh=mesh)
            share = GLOBAL_BATCH // world
            losses = train(trained, optimizer,
                           slice(rank * share, (rank + 1) * share))
            torch.save({"params": parameters_of(model), "losses": losses},
                       os.path.join(out, f"rank{rank}-{case}.pt"))
            print(f"rank {rank}: {case} done", flush=True)
        dist.barrier()
    finally:
        dist.destroy_process_group()


def _free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_workers(out, package):
    """Runs the WORLD ranks to the end; None, or why they failed (with
    their output) when one fails or they pass their deadline."""
    port = _free_port()
    env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
               WORLD_SIZE=str(WORLD), OMP_NUM_THREADS="1",
               PYTHONPATH=os.pathsep.join(
                   p for p in (package, os.environ.get("PYTHONPATH")) if p))
    procs, logs = [], []
    for rank in range(WORLD):
        log = open(out / f"rank{rank}.log", "w+")
        logs.append(log)
        procs.append(subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "--worker",
             str(out)], env=dict(env, RANK=str(rank)),
            stdout=log, stderr=subprocess.STDOUT, cwd=ROOT))
    deadline = time.monotonic() + WORKER_TIMEOUT_S
    failure = None
    while any(p.poll() is None for p in procs):
        if any(p.poll() not in (None, 0) for p in procs):
            failure = "a rank failed"
            break
        if time.monotonic() > deadline:
            failure = f"the ranks did not finish within {WORKER_TIMEOUT_S} s"
            break
        time.sleep(0.05)
    for p in procs:  # the other rank of a failed pair waits in a collective
        if p.poll() is None:
            p.kill()
        p.wait()
    text = []
    for rank, log in enumerate(logs):
        log.seek(0)
        text.append(f"--- rank {rank} (exit {procs[rank].returncode}) ---\n"
                    + log.read()[-4000:])
        log.close()
    if failure is None and any(p.returncode for p in procs):
        failure = "a rank failed"
    return failure and failure + ":\n" + "\n".join(text)


# ---------------------------------------------------------------------------
# The tests
# ---------------------------------------------------------------------------


def differences(a, b):
    """{name: max |a - b|} over the parameters of a and b."""
    assert sorted(a) == sorted(b)
    return {n: (a[n] - b[n]).abs().max().item() for n in a}


def max_difference(a, b):
    return max(differences(a, b).values())


@pytest.fixture(scope="module")
def package():
    import torch.distributed as dist
    if not dist.is_available() or not dist.is_gloo_available():
        pytest.skip("this torch has no gloo backend")
    return require_package_dir()


@pytest.fixture(autouse=True, scope="module")
def one_torch_thread():
    torch = pytest.importorskip("torch")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def ranks(package, tmp_path_factory):
    """{case: [what each rank saved]} after one run of the ranks, or the
    reason they failed (a string)."""
    import torch
    out = tmp_path_factory.mktemp("ranks")
    start = time.monotonic()
    failure = run_workers(out, package)
    print(f"ranks: {time.monotonic() - start:.1f} s")
    if failure:
        return failure
    return {case: [torch.load(out / f"rank{r}-{case}.pt")
                   for r in range(WORLD)]
            for case in CASES if (out / f"rank0-{case}.pt").exists()}


@pytest.mark.parametrize("case", sorted(CASES))
def test_data_parallel_matches_one_process(case, ranks):
    attention, optimizer, wrapper = CASES[case]
    if wrapper == "fsdp2" and not has_fsdp2():
        import torch
        pytest.skip(f"torch {torch.__version__} has no FSDP2 "
                    f"(torch.distributed.fsdp.fully_shard)")
    assert not isinstance(ranks, str), ranks
    ranks = ranks[case]

    initial = parameters_of(make_model(attention))
    whole = make_model(attention)
    whole_losses = train(whole, optimizer, slice(0, GLOBAL_BATCH))
    expected = parameters_of(whole)
    half = make_model(attention)
    train(half, optimizer, slice(0, GLOBAL_BATCH // WORLD))
    one_share = parameters_of(half)

    # Every rank holds the same parameters (DDP: identical all-reduced
    # gradients; FSDP2: the same gathered shards).
    assert max_difference(ranks[0]["params"], ranks[1]["params"]) == 0.0
    got = ranks[0]["params"]
    per_parameter = differences(got, expected)
    worst = max(per_parameter, key=per_parameter.get)
    difference = per_parameter[worst]
    moved = max_difference(expected, initial)
    elsewhere = max_difference(one_share, expected)
    # The mean of the ranks' losses is the global batch's loss.
    loss_difference = max(abs((a + b) / 2 - w) for a, b, w in zip(
        ranks[0]["losses"], ranks[1]["losses"], whole_losses))
    print(f"{case}: max |param - one process| {difference:.2e} "
          f"({worst}), "
          f"max |loss difference| {loss_difference:.2e}; parameters moved "
          f"{moved:.2e}, one rank's half alone ends {elsewhere:.2e} away")
    assert moved > 100 * TOLERANCE and elsewhere > 100 * TOLERANCE
    assert difference <= TOLERANCE, \
        f"{case}: parameters differ by {difference:.2e} (> {TOLERANCE})"
    assert loss_difference <= TOLERANCE


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="one rank of the cases")
    parser.add_argument("--worker", required=True, metavar="OUT",
                        help="the directory for the rank's results")
    worker(parser.parse_args().worker)
