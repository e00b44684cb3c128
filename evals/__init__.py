"""Measuring hopgraph's methods on public multi-hop benchmarks.

`datasets` reads each benchmark in its original format into one shape (questions, gold answers, gold
evidence located in the corpus); `metrics` scores answers and retrieved evidence; `stats` puts bootstrap
confidence intervals and significance tests on per-question scores, because dev slices are small enough
for noise to matter; `runner` runs methods over a benchmark into a resumable results.jsonl; `report` turns
that file into report.md, plots and the explorer page. Each is imported by its own name, so a command
that needs one part (`hopgraph history` reads only `steps`) does not load the rest.
"""
