"""The CI regression gate's decisions, as a library (pure: records in, a frozen GateResult
out): a run against a baseline (baseline.py: which records, their hygiene; pool.py: baselines
pooled), each instance's change with its interval (decision.py, noise.py: the noise floor per
path), the two-stage evaluation (evaluate.py), the settings a gate measures with
(settings.py), the gate resampled over recorded runs (resample.py) and the JSON form of a
gate result (serialize.py), and a change point's confirmation by a fresh rerun (confirm.py:
holds, gone, inconclusive; the gate's exit codes). The gate's measuring (both stages, the early stop, the fresh
second stage) is the run loop's: opbench/runloop/gate_run.py. Its command,
opbench/cli/gate.py, maps options onto gate_run and shows the outcome; its views are in
opbench/report/ (gate_markdown, gate_junit)."""
