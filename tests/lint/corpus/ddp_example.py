"""A DistributedDataParallel script: devices named by rank."""
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


class ToyModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.net1 = nn.Linear(10, 10)

    def forward(self, x):
        return self.net1(x)


def demo_basic(rank, world_size, steps=10):
    dist.init_process_group("nccl", rank=rank, world_size=world_size)
    model = ToyModel().to(rank)
    ddp_model = DDP(model, device_ids=[rank])
    loss_fn = nn.MSELoss()
    optimizer = torch.optim.SGD(ddp_model.parameters(), lr=0.001)
    for step in range(steps):
        optimizer.zero_grad()
        outputs = ddp_model(torch.randn(20, 10).to(rank))  # expect: XB102
        labels = torch.randn(20, 5).to(rank)  # expect: XB102
        loss = loss_fn(outputs, labels)
        loss.backward()
        optimizer.step()
        if rank == 0:
            print(step, loss.item())  # expect: XB101
    dist.destroy_process_group()
