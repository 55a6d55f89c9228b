"""The ImageNet example's train(): meters fed with .item(), a batch timer, cuda(non_blocking)."""
import time

import torch


class AverageMeter:
    def __init__(self):
        self.sum, self.count = 0.0, 0

    def update(self, val, n=1):
        self.sum += val * n
        self.count += n


def train(train_loader, model, criterion, optimizer, epoch, gpu, print_freq=10):
    batch_time = AverageMeter()
    losses = AverageMeter()
    model.train()
    end = time.time()
    for i, (images, target) in enumerate(train_loader):
        images = images.cuda(gpu, non_blocking=True)  # ok: the loader is not known here
        target = target.cuda(gpu, non_blocking=True)
        output = model(images)
        loss = criterion(output, target)
        losses.update(loss.item(), images.size(0))  # expect: XB101
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        batch_time.update(time.time() - end)  # expect: XB107
        end = time.time()
        if i % print_freq == 0:
            print(f"epoch {epoch} [{i}] loss {losses.sum / max(losses.count, 1):.4f}")


def validate(val_loader, model, criterion):
    model.eval()
    with torch.no_grad():
        end = time.time()
        for images, target in val_loader:
            images = images.cuda(non_blocking=True)
            target = target.cuda(non_blocking=True)
            output = model(images)
            loss = criterion(output, target)
            torch.cuda.synchronize()
            elapsed = time.time() - end  # ok: synchronised
            end = time.time()
            yield loss.detach(), elapsed
