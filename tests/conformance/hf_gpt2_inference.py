"""GPT-2 (transformers, from a config): next-token logits for a batch, inference, the
model's default cache on (as `model(input_ids)` returns it)."""
import torch
from transformers import GPT2Config, GPT2LMHeadModel

torch.manual_seed(0)
torch.set_num_threads(1)

config = GPT2Config(vocab_size=1000, n_positions=64, n_embd=64, n_layer=2, n_head=4)
model = GPT2LMHeadModel(config)
model.eval()
input_ids = torch.randint(0, config.vocab_size, (2, 16))

with torch.no_grad():
    for step in range(6):
        logits = model(input_ids).logits
        next_token = logits[:, -1, :].argmax(dim=-1)
        print(f"step {step} next tokens {next_token.tolist()}")
