"""Distributed runs: 2 CPU processes, gloo backend, loopback only.

* ``torch.multiprocessing.spawn`` from a script run by ``run_script``: every
  rank is watched, the parent merges the ranks' findings;
* ``torchrun`` (``python -m torch.distributed.run``) with one ``run_script``
  per rank: ranks exchange findings through the process group's store and
  rank 0 writes the merged report.
"""

import json
import os
import socket
import subprocess
import sys
import textwrap

import pytest

torch = pytest.importorskip("torch")
if not torch.distributed.is_available():  # pragma: no cover
    pytest.skip("torch.distributed is not available", allow_module_level=True)

SCRIPT = """
    import os, sys
    import torch, torch.nn as nn
    import torch.distributed as dist
    import torch.multiprocessing as mp
    from torch.nn.parallel import DistributedDataParallel as DDP
    from torch.utils.data import DataLoader, TensorDataset
    from torch.utils.data.distributed import DistributedSampler

    class Net(nn.Module):
        def __init__(self, with_aux):
            super().__init__()
            self.body = nn.Linear(8, 16)
            self.head = nn.Linear(16, 2)
            self.aux = nn.Linear(16, 2) if with_aux else None  # never used in forward

        def forward(self, x):
            return self.head(torch.relu(self.body(x)))

    def worker(rank, world, port, buggy):
        torch.set_num_threads(1)
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        dist.init_process_group("gloo", rank=rank, world_size=world)
        torch.manual_seed(0)
        model = DDP(Net(with_aux=buggy), find_unused_parameters=buggy)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        data = TensorDataset(torch.randn(64, 8), torch.randint(0, 2, (64,)))
        sampler = DistributedSampler(data, shuffle=True)
        loader = DataLoader(data, batch_size=8, sampler=sampler)
        for epoch in range(2):
            if not buggy:
                sampler.set_epoch(epoch)
            for x, y in loader:
                opt.zero_grad()
                nn.functional.cross_entropy(model(x), y).backward()
                opt.step()
        # each rank fine-tunes a local probe on its own shard, no collectives
        probe = nn.Linear(8, 2)
        probe_opt = torch.optim.SGD(probe.parameters(), lr=0.1)
        shard = 3 + (rank if buggy else 0)  # uneven shards when buggy
        for _ in range(shard):
            probe_opt.zero_grad()
            probe(torch.randn(4, 8)).sum().backward()
            probe_opt.step()
        dist.barrier()
        dist.destroy_process_group()

    if __name__ == "__main__":
        port, buggy = int(sys.argv[1]), sys.argv[2] == "buggy"
        if "RANK" in os.environ:  # started by torchrun
            worker(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]),
                   os.environ["MASTER_PORT"], buggy)
        else:
            mp.spawn(worker, args=(2, port, buggy), nprocs=2)
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def by_code(findings, code):
    return [f for f in findings if f["code"] == code]


def check_buggy(findings):
    tr606 = by_code(findings, "TR606")
    unused = [f for f in tr606 if "DistributedDataParallel" in f["message"]]
    assert len(unused) == 1
    assert "aux.weight" in unused[0]["message"] and "aux.bias" in unused[0]["message"]
    assert "[ranks 0, 1]" in unused[0]["message"]
    diverged = [f for f in tr606 if "different numbers of optimizer steps" in f["message"]]
    assert len(diverged) == 1
    assert "rank 0: 11" in diverged[0]["message"] and "rank 1: 12" in diverged[0]["message"]
    tr513 = by_code(findings, "TR513")
    assert len(tr513) == 1 and "[ranks 0, 1]" in tr513[0]["message"]
    assert not by_code(findings, "TR603")  # unused DDP parameters are reported once


@pytest.mark.parametrize("variant", ["buggy", "clean"])
def test_ddp_spawn_two_ranks_merged_report(run_py, variant):
    code, findings, report = run_py(SCRIPT, [str(free_port()), variant])
    if variant == "buggy":
        assert code == 1
        check_buggy(findings)
    else:
        assert code == 0, findings
        assert findings == []


def test_ddp_torchrun_rank0_writes_the_merged_report(tmp_path):
    script = tmp_path / "train_ddp.py"
    script.write_text(textwrap.dedent(SCRIPT))
    out = tmp_path / "report.json"
    runner = ("import sys; from torchreview.runtime import run_script; "
              f"sys.exit(run_script(sys.argv[1], sys.argv[2:], fmt='json', output={str(out)!r}))")
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node=2",
           "--master-addr=127.0.0.1", f"--master-port={free_port()}", "--no-python",
           sys.executable, "-c", runner, str(script), "0", "buggy"]
    env = dict(os.environ, OMP_NUM_THREADS="1")
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=240, env=env,
                          cwd=tmp_path)
    assert out.exists(), done.stderr[-3000:]
    findings = json.loads(out.read_text())["findings"]
    check_buggy(findings)
    assert done.returncode != 0  # rank 0 fails the run on findings
