"""python -m bench.kube [options]: the same as python -m bench kube [options]."""

import sys

from bench.kube import run

run(sys.argv[1:])
