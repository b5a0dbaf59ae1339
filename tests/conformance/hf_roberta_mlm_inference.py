"""RoBERTa masked-LM (transformers RobertaForMaskedLM from a config): fill the masked
positions of a batch, inference."""
import torch
from transformers import RobertaConfig, RobertaForMaskedLM

torch.manual_seed(0)
torch.set_num_threads(1)

config = RobertaConfig(vocab_size=1000, hidden_size=64, num_hidden_layers=2,
                       num_attention_heads=4, intermediate_size=128,
                       max_position_embeddings=64, pad_token_id=1)
model = RobertaForMaskedLM(config).eval()
input_ids = torch.randint(3, config.vocab_size, (2, 16))
mask_token_id = 4
input_ids[:, 5] = mask_token_id

with torch.no_grad():
    for step in range(6):
        logits = model(input_ids=input_ids).logits
        masked = logits[input_ids == mask_token_id]
        print(f"step {step} filled {masked.argmax(-1).tolist()}")
