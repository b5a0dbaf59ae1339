"""The CI regression gate, as a library: a run against a baseline (baseline.py: which records,
their hygiene; pool.py: baselines pooled), each instance's change with its interval
(decision.py, noise.py: the noise floor per path), the two-stage evaluation with re-measuring
(evaluate.py, fresh_stage.py), each stage's early stop once an instance is decided
(early_stop.py), the settings a gate measures with (settings.py), a whole gate
as one call (run_gate.py: options, set-up checks, both stages, history), the gate resampled over
recorded runs (resample.py) and the JSON form of a gate result (serialize.py). Its command,
opbench/cli/gate.py, maps options onto run_gate and shows the outcome; its views are in
opbench/report/ (gate_markdown, gate_junit)."""
