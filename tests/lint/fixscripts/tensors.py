"""Real tensors: the moves --fix rewrites, on a tiny model trained a few steps."""
import torch
from torch import nn

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(3, 1)
model.to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(8, 3)
x.to(device)
y = x.sum(dim=1, keepdim=True) * 2
mask = torch.ones(8, 1).to(device)
for _ in range(3):
    loss = ((model(x) - y) ** 2 * mask).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
print(round(loss.item(), 4))
