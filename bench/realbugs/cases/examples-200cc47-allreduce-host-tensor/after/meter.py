import torch
import torch.distributed as dist


class RunningMean:
    def __init__(self):
        self.total = 0.0
        self.count = 0

    def update(self, value, n=1):
        self.total += value * n
        self.count += n

    def all_reduce(self):
        device = "cuda" if torch.cuda.is_available() else "cpu"
        packed = torch.tensor([self.total, self.count], dtype=torch.float32, device=device)
        dist.all_reduce(packed, dist.ReduceOp.SUM, async_op=False)
        self.total, self.count = packed.tolist()
        return self.total / max(self.count, 1)


def setup(rank, world):
    dist.init_process_group("nccl", rank=rank, world_size=world)
    torch.cuda.set_device(rank)
