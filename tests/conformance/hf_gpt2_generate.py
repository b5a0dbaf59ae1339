"""GPT-2 (transformers, from a config): greedy decoding with model.generate(max_new_tokens=8),
the KV cache on, as a user samples from a language model; six prompts in turn, inference."""
import torch
from transformers import GPT2Config, GPT2LMHeadModel

torch.manual_seed(0)
torch.set_num_threads(1)

config = GPT2Config(vocab_size=500, n_positions=64, n_embd=64, n_layer=2, n_head=4,
                    pad_token_id=0, eos_token_id=499)
model = GPT2LMHeadModel(config)
model.eval()
prompt = torch.randint(1, 499, (1, 6))

for step in range(6):
    out = model.generate(prompt, attention_mask=torch.ones_like(prompt), max_new_tokens=8,
                         do_sample=False)
    print(f"step {step} generated {out[0, prompt.shape[1]:].tolist()}")
