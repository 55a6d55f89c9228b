"""Parameters annotated as tensors and devices: --fix may rely on them."""
import torch


def prepare(x: torch.Tensor, device: torch.device) -> torch.Tensor:
    x.to(device)
    scale = torch.full((x.shape[0],), 2.0).to(device)
    return x * scale


print(prepare(torch.arange(3.0), torch.device("cpu")).tolist())
