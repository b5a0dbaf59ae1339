"""A Qwen2 decoder (transformers Qwen2ForCausalLM from a config), a prompt's logits,
inference under torch.inference_mode()."""
import torch
from transformers import Qwen2Config, Qwen2ForCausalLM

torch.manual_seed(0)
torch.set_num_threads(1)

config = Qwen2Config(vocab_size=500, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                     num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)
model = Qwen2ForCausalLM(config).eval()
prompt = torch.randint(0, config.vocab_size, (1, 24))

with torch.inference_mode():
    for step in range(6):
        logits = model(prompt, use_cache=False).logits
        probs = torch.softmax(logits[0, -1], dim=-1)
        print(f"step {step} top prob {probs.max().item():.5f}")
