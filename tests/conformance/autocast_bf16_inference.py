"""Mixed-precision inference with torch.autocast("cpu", dtype=torch.bfloat16): a Linear /
LayerNorm / GELU MLP stack whose matmuls run in bfloat16, the result cast back with
.float(); as people try bfloat16 on CPU."""
import torch
from torch import nn

torch.manual_seed(0)
torch.set_num_threads(1)

model = nn.Sequential(
    nn.Linear(128, 256), nn.GELU(), nn.LayerNorm(256),
    nn.Linear(256, 256), nn.GELU(), nn.Linear(256, 10)).eval()
x = torch.randn(64, 128)

with torch.inference_mode():
    for step in range(6):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            logits = model(x)
        probs = logits.float().softmax(dim=-1)
        print(f"step {step} {logits.dtype} top {probs.max(dim=-1).values.mean().item():.5f}")
