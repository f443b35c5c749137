"""slo.koordinator.sh: Koordinator's NodeMetric, as LoadAwareScheduling reads it."""
