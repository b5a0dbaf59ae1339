"""torch nn.TransformerEncoderLayer (batch_first, norm_first) classifier trained with gradient
accumulation over two micro-batches, AdamW, a OneCycleLR scheduler stepped every optimizer
step and optimizer.zero_grad(set_to_none=True), as fine-tuning loops write it."""
import torch
from torch import nn

torch.manual_seed(0)
torch.set_num_threads(1)


class Classifier(nn.Module):
    def __init__(self, vocab=200, d_model=64, classes=5):
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model)
        layer = nn.TransformerEncoderLayer(d_model, nhead=4, dim_feedforward=128, dropout=0.1,
                                           batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
        self.head = nn.Linear(d_model, classes)

    def forward(self, tokens):
        return self.head(self.encoder(self.embed(tokens)).mean(dim=1))


model = Classifier()
optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.01)
steps, accumulation = 6, 2
scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=1e-3, total_steps=steps + 1)
loss_fn = nn.CrossEntropyLoss()
tokens = torch.randint(0, 200, (accumulation, 8, 16))
labels = torch.randint(0, 5, (accumulation, 8))

model.train()
for step in range(steps):
    optimizer.zero_grad(set_to_none=True)
    for micro in range(accumulation):
        loss = loss_fn(model(tokens[micro]), labels[micro]) / accumulation
        loss.backward()
    optimizer.step()
    scheduler.step()
    print(f"step {step} loss {loss.item():.5f} lr {scheduler.get_last_lr()[0]:.6f}")
