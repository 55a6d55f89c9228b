"""Training steps whose parts live elsewhere: a backward and step inside timm's loss_scaler, a
trainer class holding its model, a GAN step whose models the caller moved, batches moved by
map() or a project helper, implicit reads (masks, legacy .data[0]) and numpy noise."""
import numpy as np
import torch
from torch.autograd import Variable
from utils import to_torch

Tensor = torch.cuda.FloatTensor if torch.cuda.is_available() else torch.FloatTensor


def train_one_epoch(model, criterion, data_loader, optimizer, device, loss_scaler):
    for samples, targets in data_loader:
        samples = samples.to(device, non_blocking=True)
        targets = targets.to(device, non_blocking=True)
        with torch.autocast("cuda"):
            loss = criterion(model(samples), targets)
        loss_value = loss.item()  # expect: XB101
        optimizer.zero_grad()
        loss_scaler(loss, optimizer, parameters=model.parameters())
        if not np.isfinite(loss_value):
            raise SystemExit(1)


class Trainer:
    def __init__(self, model, device):
        self.model = model
        self.device = device
        self.model.to(device)

    def fit(self, loader, optimizer):
        for batch in loader:
            x, y = map(lambda t: t.to(self.device), batch)
            logits = self.model(x)
            loss = torch.nn.functional.cross_entropy(logits, y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            print(y.float().mean().item())  # expect: XB101
            correct = logits[y >= 0].argmax(1)  # expect: XB101


def gan_step(G, D, real, opt_g, opt_d, criterion):
    z = Variable(Tensor(np.random.normal(0, 1, (real.size(0), 100))))  # expect: XB102
    fake = G(z)
    d_loss = criterion(D(real), 1) + criterion(D(fake.detach()), 0)
    opt_d.zero_grad()
    d_loss.backward()
    opt_d.step()
    g_loss = criterion(D(fake), 1)
    opt_g.zero_grad()
    g_loss.backward()
    opt_g.step()
    return g_loss.data[0]  # expect: XB101


def train_gan(loader, device, generator_cls, discriminator_cls, criterion):
    G = generator_cls().to(device)
    D = discriminator_cls().to(device)
    opt_g = torch.optim.Adam(G.parameters())
    opt_d = torch.optim.Adam(D.parameters())
    for real, _ in loader:
        batch = to_torch(real, device)
        g = gan_step(G, D, batch, opt_g, opt_d, criterion)
        print(g)  # ok: the legacy read returned a number
