"""The run loop: what to measure next and when to stop, between the instruments and the
records. It drives the measuring layer (runner/) and judges through verdicts/; the records
(results/) and the gate's decisions (gate/) never measure.

  recorded_run      The one execute-and-record path: `run`, `measure_instance`, the fixed
                    protocol's stop rule (`FixedPasses`, `run_passes`) and the results file
                    written after each instance
  scheduler         The one loop: pass 1, then visits of the open instances, a StopRule
                    deciding who is visited and when the run ends
  sequential_run    Sequential stopping on the verdict (`SequentialStop`): each look's spent
                    confidence, more processes only for the undecided, within a time budget
  gate_run          `opbench gate`'s measuring: the current run at the baseline's settings,
                    then the second stage
  gate_early_stop   The gate's evidence as a stop rule: each stage stops an instance once its
                    decision is settled
  gate_fresh_stage  The gate's second stage in fresh worker processes
  bisect            `opbench bisect`'s search over an ordered list of environments (its probes
                    an injected callable)
"""
