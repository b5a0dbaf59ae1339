"""ViT (transformers ViTForImageClassification from a config): classify a batch of images,
inference."""
import torch
from transformers import ViTConfig, ViTForImageClassification

torch.manual_seed(0)
torch.set_num_threads(1)

config = ViTConfig(image_size=32, patch_size=8, num_channels=3, hidden_size=64,
                   num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
                   num_labels=10)
model = ViTForImageClassification(config).eval()
pixel_values = torch.randn(2, 3, 32, 32)

with torch.no_grad():
    for step in range(6):
        logits = model(pixel_values=pixel_values).logits
        predicted = logits.argmax(-1)
        print(f"step {step} classes {predicted.tolist()}")
