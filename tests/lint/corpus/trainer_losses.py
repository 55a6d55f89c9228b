"""Trainers' losses and what they are computed from: a dict of losses stacked and summed, a
loss averaged from a helper's per-sample losses, a likelihood four assignments before the loss, a
model's own loss method handed the batch as it comes, the dict of losses tested for emptiness."""
import torch
import torch.nn.functional as F


def multitask(model, loader, optimizer, device):
    running = {}
    for x_dict, y_dict in loader:
        loss_dict, count_dict = model.calculate_loss(x_dict, y_dict)
        for name in loss_dict:
            running[name] += loss_dict[name].item() * count_dict[name]  # expect: XB101
        if not loss_dict:  # ok: a dict's emptiness, no tensor read
            continue
        loss = torch.stack(list(loss_dict.values())).sum()
        loss.backward()
        optimizer.step()


def averaged(net, loader, optimizer, get_losses):
    net.cuda()
    total = 0.0
    for batch in loader:
        losses = get_losses(net, batch)
        loss = torch.mean(losses)
        total += losses.sum().item()  # expect: XB101
        loss.backward()
        optimizer.step()
    return total


def clipped(evaluate, rollouts, optimizer, clip_range):
    for data in rollouts:
        log_prob, values = evaluate(data.obs, data.actions)
        likelihood = torch.exp(log_prob - data.old_log_prob)
        surrogate = data.advantages * likelihood
        policy_loss = -torch.min(surrogate, data.advantages).mean()
        print(torch.mean((torch.abs(likelihood - 1) > clip_range).float()).item())  # expect: XB101
        loss = policy_loss + F.mse_loss(values, data.returns)
        loss.to('cuda').backward()
        optimizer.step()


def raw_batch(model, loader, optimizer, device):
    model.to(device)
    for batch in loader:
        labels = batch["labels"]
        if labels.any():  # ok: the batch as it comes; the model's method moves it itself
            print("labelled")
        loss = model.compute_loss(batch, labels)
        loss.backward()
        optimizer.step()
