"""A Llama-style decoder (transformers LlamaForCausalLM from a config: RMSNorm, rotary
embeddings, SwiGLU, grouped-query attention), trained with labels=, AdamW and gradient
clipping, as a fine-tuning loop does."""
import torch
from transformers import LlamaConfig, LlamaForCausalLM

torch.manual_seed(0)
torch.set_num_threads(1)

config = LlamaConfig(vocab_size=500, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                     num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)
model = LlamaForCausalLM(config)
model.train()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
input_ids = torch.randint(0, config.vocab_size, (2, 16))

for step in range(6):
    outputs = model(input_ids=input_ids, labels=input_ids)
    loss = outputs.loss
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
    optimizer.step()
    optimizer.zero_grad()
    print(f"step {step} loss {loss.item():.4f}")
