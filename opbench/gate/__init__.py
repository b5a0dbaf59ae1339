"""`opbench gate` and `opbench history`: the CI regression gate and the run history."""
