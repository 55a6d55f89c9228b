"""A DataLoader training loop: what it yields is unpacked, not known."""
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
device = torch.device("cpu")
data = TensorDataset(torch.randn(16, 4), torch.randint(0, 2, (16,)))
model = nn.Linear(4, 2).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for xb, yb in DataLoader(data, batch_size=8):
    xb.to(device)
    yb = yb.to(device)
    loss = nn.functional.cross_entropy(model(xb), yb)
    opt.zero_grad()
    loss.backward()
    opt.step()
print(round(loss.item(), 4))
