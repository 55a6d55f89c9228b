"""A LightningModule: the framework owns the loop and moves the batches; nothing to report."""
import lightning as L
import torch
import torch.nn.functional as F
from torch import nn


class LitClassifier(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.layer = nn.Linear(28 * 28, 10)

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = F.cross_entropy(self.layer(x.view(x.size(0), -1)), y)
        self.log("train_loss", loss, prog_bar=True)  # ok: Lightning syncs when it logs
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        preds = self.layer(x.view(x.size(0), -1)).argmax(1)
        acc = (preds == y).float().mean()
        self.log("val_acc", acc)
        return acc

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-3)

    def transfer_batch_to_device(self, batch, device, dataloader_idx):
        x, y = batch
        return x.to(device), y.to(device)
