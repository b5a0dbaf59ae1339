"""BART (transformers BartForConditionalGeneration from a config): one teacher-forced
forward of an encoder-decoder, inference."""
import torch
from transformers import BartConfig, BartForConditionalGeneration

torch.manual_seed(0)
torch.set_num_threads(1)

config = BartConfig(vocab_size=500, d_model=64, encoder_layers=2, decoder_layers=2,
                    encoder_attention_heads=4, decoder_attention_heads=4,
                    encoder_ffn_dim=128, decoder_ffn_dim=128, max_position_embeddings=64)
model = BartForConditionalGeneration(config).eval()
input_ids = torch.randint(3, config.vocab_size, (2, 16))
decoder_input_ids = torch.randint(3, config.vocab_size, (2, 8))

with torch.no_grad():
    for step in range(6):
        out = model(input_ids=input_ids, decoder_input_ids=decoder_input_ids, use_cache=False)
        print(f"step {step} logits mean {out.logits.mean().item():.6f}")
