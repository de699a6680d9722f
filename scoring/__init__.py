"""Benchmarks and how they are scored: one package per benchmark kind (scoring/kinds/), items and
criteria, judge configs, runs from creation through the query loop to aggregation, results files."""
