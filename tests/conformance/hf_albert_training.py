"""transformers AlbertForSequenceClassification from a small config (shared layers,
factorized embeddings), random weights, labels= (the loss inside forward), AdamW with a
linear warmup schedule (transformers.get_linear_schedule_with_warmup)."""
import torch
from transformers import AlbertConfig, AlbertForSequenceClassification, get_linear_schedule_with_warmup

torch.manual_seed(0)
torch.set_num_threads(1)

config = AlbertConfig(vocab_size=500, embedding_size=32, hidden_size=64, num_hidden_layers=2,
                      num_attention_heads=4, intermediate_size=128, max_position_embeddings=64,
                      num_labels=3)
model = AlbertForSequenceClassification(config)
model.train()
optimizer = torch.optim.AdamW(model.parameters(), lr=5e-5)
scheduler = get_linear_schedule_with_warmup(optimizer, num_warmup_steps=2, num_training_steps=6)
input_ids = torch.randint(0, 500, (4, 24))
attention_mask = torch.ones_like(input_ids)
attention_mask[2:, 18:] = 0
labels = torch.tensor([0, 2, 1, 0])

for step in range(6):
    out = model(input_ids=input_ids, attention_mask=attention_mask, labels=labels)
    out.loss.backward()
    optimizer.step()
    scheduler.step()
    optimizer.zero_grad()
    print(f"step {step} loss {out.loss.item():.5f}")
