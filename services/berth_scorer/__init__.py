"""The scorer service: a decision for every pending pod."""
