"""DistilBERT (transformers DistilBertForSequenceClassification from a config): a
classification fine-tuning step with labels=, SGD with momentum and gradient clipping."""
import torch
from transformers import DistilBertConfig, DistilBertForSequenceClassification

torch.manual_seed(0)
torch.set_num_threads(1)

config = DistilBertConfig(vocab_size=1000, dim=64, n_layers=2, n_heads=4, hidden_dim=128,
                          max_position_embeddings=64, num_labels=3)
model = DistilBertForSequenceClassification(config)
model.train()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
input_ids = torch.randint(0, config.vocab_size, (4, 16))
attention_mask = torch.ones_like(input_ids)
labels = torch.tensor([0, 2, 1, 0])

for step in range(6):
    optimizer.zero_grad()
    out = model(input_ids=input_ids, attention_mask=attention_mask, labels=labels)
    out.loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    print(f"step {step} loss {out.loss.item():.4f}")
