"""An image classifier trained the tutorial way: reads of the loss every batch."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(784, 10)

    def forward(self, x):
        return self.fc(x.flatten(1))


def train(train_set, epochs=2):
    model = Net().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    criterion = nn.CrossEntropyLoss()
    loader = DataLoader(train_set, batch_size=64, shuffle=True, pin_memory=True)
    history = []
    for epoch in range(epochs):
        running = 0.0
        correct = 0
        for step, (images, labels) in enumerate(loader):
            images, labels = images.to(device), labels.to(device)
            optimizer.zero_grad()
            outputs = model(images)
            loss = criterion(outputs, labels)
            loss.backward()
            optimizer.step()
            running += loss.item()  # expect: XB101
            correct += (outputs.argmax(1) == labels).sum().item()  # expect: XB101
            history.append(float(loss))  # expect: XB101
            if step % 100 == 0:
                print(f"epoch {epoch} step {step} loss {loss.item():.4f}")  # expect: XB101/info
        print(f"epoch {epoch}: {running:.3f}, {correct} right")  # ok: plain floats
        last = loss.item()  # ok: once per epoch, after the batch loop
    return model, history, last


def evaluate(model, test_set):
    loader = DataLoader(test_set, batch_size=256, pin_memory=True)
    predictions = []
    model.eval()
    with torch.no_grad():
        for images, _ in loader:
            logits = model(images.to(device))
            predictions.append(logits.argmax(1).cpu())  # ok: evaluation, the host values are its result
    return torch.cat(predictions)


def summarize(model, batch):
    out = model(batch.to(device))
    return out.mean().item()  # ok: no loop at all


def accumulate_on_device(model, loader, optimizer):
    total = torch.zeros((), device=device)
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        loss = F.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        total += loss.detach()  # ok: stays on the device
    return total.item()  # ok: one read after the loop
