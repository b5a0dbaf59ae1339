"""GPT-2 (transformers GPT2LMHeadModel from a config) fine-tuned with gradient checkpointing
as long-context training enables it: `gradient_checkpointing_enable` with the reentrant
checkpoint (each block's forward under no_grad, recomputed in the backward), labels=,
AdamW."""
import torch
from transformers import GPT2Config, GPT2LMHeadModel

torch.manual_seed(0)
torch.set_num_threads(1)

config = GPT2Config(vocab_size=1000, n_positions=64, n_embd=64, n_layer=2, n_head=4,
                    use_cache=False)
model = GPT2LMHeadModel(config)
model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": True})
model.train()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
input_ids = torch.randint(0, config.vocab_size, (4, 32))

for step in range(6):
    optimizer.zero_grad()
    out = model(input_ids=input_ids, labels=input_ids)
    out.loss.backward()
    optimizer.step()
    print(f"step {step} loss {out.loss.item():.4f}")
