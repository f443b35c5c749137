"""berth against the real kube-scheduler 1.36, side by side (issue 33, part 5).

A scenario (scenario.py) is a cluster and pending pods in order. runner.py loads it into the control plane,
lets kube-scheduler decide each pod (created one at a time, behind a scheduling gate until berth has seen
it), and decides the same pod with berth on a snapshot of the same objects, with the same
KubeSchedulerConfiguration (berth's extras off); then compares the two (compare.py). handwritten.py holds
one scenario per default plugin's main cases, generator.py seeded random ones.
"""
