"""berth's pure core: models, semantics and policies. No I/O, no framework imports."""
