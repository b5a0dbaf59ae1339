"""A small UNet-ish denoiser: Conv2d + GroupNorm + SiLU blocks, a strided down path,
F.interpolate(scale_factor=2, mode="nearest") up path with skip torch.cat, MSE to the noise,
SGD; as diffusion code writes it."""
import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
torch.set_num_threads(1)


def block(cin, cout):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.GroupNorm(4, cout), nn.SiLU())


class TinyUNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc1, self.enc2 = block(3, 16), block(16, 32)
        self.down = nn.Conv2d(16, 16, 3, stride=2, padding=1)
        self.dec = block(32 + 16, 16)
        self.out = nn.Conv2d(16, 3, 1)

    def forward(self, x):
        skip = self.enc1(x)
        low = self.enc2(self.down(skip))
        up = F.interpolate(low, scale_factor=2, mode="nearest")
        return self.out(self.dec(torch.cat([up, skip], dim=1)))


model = TinyUNet()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
clean = torch.randn(4, 3, 32, 32)
noise = torch.randn_like(clean)

for step in range(6):
    optimizer.zero_grad()
    loss = F.mse_loss(model(clean + 0.5 * noise), noise)
    loss.backward()
    optimizer.step()
    print(f"step {step} loss {loss.item():.5f}")
