"""Objects moved in a loop: the loop's target may be anything."""
import torch


class Image:
    def __init__(self, n):
        self.pixels = torch.zeros(n)

    def to(self, device):
        self.pixels = self.pixels.to(device)


batch = [Image(2), Image(3)]
for img in batch:
    img.to("cpu")
print(sum(i.pixels.numel() for i in batch))
