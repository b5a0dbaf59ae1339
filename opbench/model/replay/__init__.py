"""What runs in a replay process, one framework each: how a call replays (routes), and the
replay of a step program, its output fingerprints and its timings.

  executor         Replays a step program in one framework, checks and times it
  compiled_step    The timed step written out as straight-line Python (the executor's fast path)
  main             `python -m opbench.model.replay.main`: one replay process
  route            What a route is (a callable made from the call's arguments)
  routes           How each call replays in each framework; arguments as written
  training_routes  Training in the other framework: backward, optimizers, torch's utilities
  mindspore_to_torch  MindSpore calls in torch by rule: padding made explicit, ops/primitives
                   through the mapping's mint entries, ops.assign as copy_ under no_grad
  momentum_route   MindSpore's nn.Momentum (weight decay groups) as itself and as torch's SGD
  adam_weight_decay_route  MindSpore's nn.AdamWeightDecay as itself and as torch's AdamW
  optimizer_fold   Per-weight optimizer updates folded into a port's fused kernel
  trainable        Which plain tensors are weights in a hand-written training step
  inplace_routes   In-place methods MindSpore's CPU lacks, as out-of-place calls written back
  layer_routes     nn.LSTM and nn.EmbeddingBag (as lowered) in both frameworks
  attention_dropout  Attention's dropout in MindSpore (random: outputs not compared)
  randomness       Which calls draw random numbers (a training dropout): not compared
  truncation       Integers truncated from floats: one integer step allowed in the check
  call_arguments   A call's arguments by parameter name, for the rule modules
  einsum_plan      An einsum as sums, permutes, reshapes and matrix products, by rule (pure)
  einsum_route     torch.einsum in MindSpore: mint.einsum, then the plan in mint calls
  function_routes  A custom autograd.Function's output as its straight-through stand-in
  float_draw       The interval a float external is drawn in: the default within its observed range
"""
