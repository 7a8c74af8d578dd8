"""The benchmark runner: ``python -m benchmarks <table> [options]``, one subcommand per claim.

Each subcommand measures one table and writes it to ``benchmarks/results/<table>.json`` (date,
machine, command line, epslap commit, versions of the peers and libraries, then the rows);
``python -m benchmarks table FILE.json`` prints a result file as a Markdown table. The current
results, each with the command that produced it, are on benchmarks/README.md; design studies and
microbenchmarks are in benchmarks/studies/. Run it from the repository root.
"""
