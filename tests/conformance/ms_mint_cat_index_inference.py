"""MindSpore with mint, data plumbing: mint.cat / mint.split, mint.where, mint.gather,
slicing on Tensors, as a post-processing step of a detection head is written; inference.
Where MindSpore 2.10's CPU has no mint kernel (zeros_like, index_select, stack), the script
uses ops, as a CPU port does."""
import mindspore as ms
import numpy as np
from mindspore import Tensor, mint, ops

ms.set_context(mode=ms.PYNATIVE_MODE)
ms.set_device("CPU")
np.random.seed(0)

boxes = Tensor(np.random.rand(64, 4).astype(np.float32))
scores = Tensor(np.random.rand(64, 8).astype(np.float32))
labels = Tensor(np.random.randint(0, 8, (64, 1)).astype(np.int64))
keep = Tensor(np.array([1, 5, 9, 17, 33], dtype=np.int64))

for step in range(6):
    xy, wh = mint.split(boxes, 2, dim=1)
    corners = mint.cat([xy - wh / 2, xy + wh / 2], dim=1)
    best = mint.gather(scores, 1, labels)
    confident = mint.where(best > 0.5, best, ops.zeros_like(best))
    kept = ops.gather(corners, keep, 0)
    stacked = ops.stack([kept, kept * 2], axis=0)
    area = (corners[:, 2] - corners[:, 0]) * (corners[:, 3] - corners[:, 1])
    print(f"step {step} {confident.sum().asnumpy():.4f} {stacked.mean().asnumpy():.4f} "
          f"{area.mean().asnumpy():.5f}")
