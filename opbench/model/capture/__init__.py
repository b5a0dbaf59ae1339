"""What runs in the user's own interpreter, beside their script: as few imports as possible
(the tracer, the program's data model; never numpy-heavy analysis, never a replay).

  observer     The tracer's observer that records each call's data flow (capture.py before)
  layout       An external tensor's layout (expanded, permuted) and small bool/integer values
  float_range  A float tensor's observed min and max (sampled where large), for the replay's draw
  main         `python -m opbench.model.capture.main`: runs the script under it, bounded steps
  lowering     Framework layers turned into the functions (or primitives) they perform
  sequence_lowering  nn.LSTM and nn.EmbeddingBag as torch.lstm and F.embedding_bag
  lowering_record    What a layer lowers to (Lowered)
  import_patch  The wrappers' shared install on a framework's import, and their uninstall
  ms_backward  MindSpore's value_and_grad wrapped so each grad call adds a backward call
  ms_grad_operation  ops.GradOperation (nn.TrainOneStepCell's) wrapped the same way
  ms_jit       mindspore.jit wrapped: each call of a compiled function one call, timed
  torch_function  torch.autograd.Function.apply wrapped: a custom Function's output as a call
  torch_checkpoint  torch.utils.checkpoint wrapped: the calls inside marked as recomputed
"""
