"""T5 (transformers T5ForConditionalGeneration from a config), encoder-decoder trained with
labels= and AdamW, as a seq2seq fine-tuning loop does."""
import torch
from transformers import T5Config, T5ForConditionalGeneration

torch.manual_seed(0)
torch.set_num_threads(1)

config = T5Config(vocab_size=500, d_model=64, d_kv=16, d_ff=128, num_layers=2,
                  num_decoder_layers=2, num_heads=4, decoder_start_token_id=0, pad_token_id=0)
model = T5ForConditionalGeneration(config)
model.train()
optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
input_ids = torch.randint(1, config.vocab_size, (2, 16))
labels = torch.randint(1, config.vocab_size, (2, 8))

for step in range(6):
    loss = model(input_ids=input_ids, labels=labels).loss
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step} loss {loss.item():.4f}")
