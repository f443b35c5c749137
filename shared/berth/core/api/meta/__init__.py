"""What every object has and the values in it (kube: apimachinery): ObjectMeta on the wire,
quantities, selectors, durations, field validation, and msgspec's errors in berth's words."""
