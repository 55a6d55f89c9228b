"""A name bound to a tensor on one path and to another object on the other."""
import sys

import torch


class Mask:
    def __init__(self):
        self.bits = torch.ones(2)

    def to(self, device):
        self.bits = self.bits.to(device)


mask = torch.ones(2) if len(sys.argv) > 5 else Mask()
mask.to("cpu")
print(type(mask).__name__)
