"""BERT (transformers, built from a config, random weights): a batch of sentences encoded,
inference, as a feature-extraction script runs it."""
import torch
from transformers import BertConfig, BertModel

torch.manual_seed(0)
torch.set_num_threads(1)

config = BertConfig(vocab_size=1000, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                    intermediate_size=128, max_position_embeddings=64)
model = BertModel(config).eval()
input_ids = torch.randint(0, config.vocab_size, (2, 16))
attention_mask = torch.ones_like(input_ids)
attention_mask[1, 12:] = 0          # the second sentence is padded

with torch.no_grad():
    for step in range(6):
        out = model(input_ids=input_ids, attention_mask=attention_mask)
        pooled = out.pooler_output
        print(f"step {step} pooled mean {pooled.mean().item():.6f}")
