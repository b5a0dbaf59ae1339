"""A spectral filter: torch.fft.rfft2 of a batch of images, a learned complex-valued
mask, irfft2 back (complex64 tensors in the step); inference."""
import torch

torch.manual_seed(0)
torch.set_num_threads(1)

images = torch.randn(4, 3, 32, 32)
weight = torch.randn(3, 32, 17, dtype=torch.complex64) * 0.1

with torch.no_grad():
    for step in range(6):
        spectrum = torch.fft.rfft2(images, norm="ortho")
        filtered = spectrum * weight
        out = torch.fft.irfft2(filtered, s=(32, 32), norm="ortho")
        energy = spectrum.abs().pow(2).mean()
        print(f"step {step} out {out.std().item():.6f} energy {energy.item():.4f}")
