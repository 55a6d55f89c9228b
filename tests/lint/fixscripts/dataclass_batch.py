"""A dataclass whose .to() method moves its tensors in place."""
from dataclasses import dataclass

import torch


@dataclass
class Targets:
    boxes: torch.Tensor
    labels: torch.Tensor

    def to(self, device):
        self.boxes = self.boxes.to(device)
        self.labels = self.labels.to(device)


def collate(rows):
    return Targets(torch.zeros(len(rows), 4), torch.tensor(rows))


targets = collate([1, 2])
targets.to(torch.device("cpu"))
print(targets.labels.tolist(), targets.boxes.shape[0])
