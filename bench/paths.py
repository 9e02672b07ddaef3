"""Where the benchmark's files are: the repository, bench/, and bench/out/'s
inputs, temp directories (one per tool) and stderr logs."""
import os

BENCH = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(BENCH)
OUT = os.path.join(BENCH, "out")
TMP = os.path.join(OUT, "tmp")
LOGS = os.path.join(OUT, "logs")
