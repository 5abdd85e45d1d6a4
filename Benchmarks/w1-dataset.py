#!/usr/bin/env python3
"""Writes lansync-bench's W1 dataset as an import file: 100,000 items (ids item-0000000...,
type bench) of ten 40-character fields f0..f9. Shared by the measuring scripts beside it.

    Benchmarks/w1-dataset.py FILE
"""
import sys

with open(sys.argv[1], "w") as f:
    for i in range(100000):
        fields = ",".join('"f%d":"value %d of item %07d %s"' % (k, k, i, "x" * (26 - len(str(k)))) for k in range(10))
        f.write('{"id":"item-%07d","type":"bench","fields":{%s}}\n' % (i, fields))
