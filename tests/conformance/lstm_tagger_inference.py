"""A sequence tagger: nn.Embedding, a bidirectional nn.LSTM and a Linear head, inference
with log_softmax, as NLP tutorials write it."""
import torch
from torch import nn

torch.manual_seed(0)
torch.set_num_threads(1)


class Tagger(nn.Module):
    def __init__(self, vocab=200, emb=32, hidden=32, tags=7):
        super().__init__()
        self.embed = nn.Embedding(vocab, emb)
        self.lstm = nn.LSTM(emb, hidden, batch_first=True, bidirectional=True)
        self.out = nn.Linear(2 * hidden, tags)

    def forward(self, tokens):
        h, _ = self.lstm(self.embed(tokens))
        return torch.log_softmax(self.out(h), dim=-1)


model = Tagger().eval()
tokens = torch.randint(0, 200, (4, 12))
with torch.no_grad():
    for step in range(6):
        tags = model(tokens).argmax(-1)
        print(f"step {step} tags {tags[0].tolist()}")
