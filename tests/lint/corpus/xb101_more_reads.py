"""More host reads in a loop that trains: print, tolist, numpy, if tensor, a while loop."""
import numpy as np
import torch


def fit(model, batches, optimizer, loss_fn, device="cuda"):
    log = []
    for batch in batches:
        inputs = batch["x"].to(device)
        target = batch["y"].to(device)
        pred = model(inputs)
        loss = loss_fn(pred, target)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        print(loss)  # expect: XB101
        log.append(pred.detach().tolist())  # expect: XB101
        if torch.isnan(loss):  # expect: XB101
            raise RuntimeError("diverged")
        probs = pred.softmax(-1).detach().cpu().numpy()  # expect: XB101
        log.append(probs.tolist())  # ok: a numpy array, already on the host
        scores = np.asarray([1.0, 2.0])
        log.append(scores.tolist())  # ok: numpy
    return log


def until_converged(model, data, target, optimizer, loss_fn):
    data, target = data.cuda(), target.cuda()
    loss = loss_fn(model(data), target)
    while loss.item() > 0.01:  # expect: XB101
        optimizer.zero_grad()
        loss = loss_fn(model(data), target)
        loss.backward()
        optimizer.step()


def no_training(values, device):
    out = []
    for v in values:  # not a batch loop: no forward, backward or step
        t = torch.as_tensor(v).to(device)
        out.append(t.sum().item())  # ok: this loop trains nothing
    return out


def host_only(model, loader, optimizer, loss_fn):
    for x, y in loader:  # nothing moved to a device: the reads cost no synchronisation
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        print(loss.item())  # ok: host tensors


def helper_step(model, optimizer, batch, device):
    x = batch.to(device)
    loss = model(x).sum()
    loss.backward()
    optimizer.step()
    return loss


def through_a_helper(model, optimizer, batches, device):
    for batch in batches:
        x = batch.to(device)
        loss = helper_step(model, optimizer, x, device)
        norm = x.norm()
        print(norm.item())  # expect: XB101
        print(loss)  # expect: XB101


def get_model_device(layer):
    return next(layer.parameters()).device


def regularise(layer, cov):
    """An iterative solver, not training: its reads are not per batch."""
    damp = 0.01
    while True:
        eye = torch.eye(cov.size(0), device=get_model_device(layer))
        fixed = cov.to(get_model_device(layer)) + damp * eye
        error = torch.dist(fixed @ torch.linalg.inv(fixed), eye).item()  # ok: no step here
        if error < 0.05:
            return fixed
        damp *= 2


def with_a_mover(model, loader, optimizer, device):
    from accelerate.utils import send_to_device
    from torchtune.training import batch_to_device

    for batch in loader:
        batch_to_device(batch, device)  # moves the dict's tensors in place
        loss = model(**batch).loss
        loss.backward()
        optimizer.step()
        print(loss.item())  # expect: XB101
        moved = send_to_device(batch, device)
        print(moved["labels"].sum().item())  # expect: XB101
