"""Judging (pure): statistics of the rounds, interference in the samples, the verdict rules,
the explanations of a ratio, and conclusions.py, which turns a measured instance's raw
record into its statistics and verdict.

  conclusions   What a measured instance concludes: each measurement's statistics, interference
                and verdict from its raw rounds, the instance's explanation and verdict, and the
                run-wide between-process prior applied once every process has measured
  explain       Plain-language reasons behind a ratio: per-call overhead against kernel time,
                serial against async
  interference  Detect one side's work landing in the other side's samples, from the samples
                themselves
  rules         Verdicts: turn an estimate and its interval into a decision, and decisions into
                exit codes
  stats         Pure statistics: robust summaries, the paired ratio with its interval, run-to-
                run change
"""
