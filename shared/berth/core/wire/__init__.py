"""The wire: one msgspec Struct per Kubernetes kind berth reads, with only the fields it reads.

This is the lowest layer of the core (it imports only msgspec and the standard library). Objects
are decoded straight from bytes (JSON event lines, bus messages, snapshot files) or converted from
Python objects (YAML snapshots) into these Structs; `berth.core.convert` and its siblings then
normalise them into the core models. Unknown fields are ignored, every field is optional (null
reads as absent, as the API server's defaulting would), and quantities stay as they arrive.

Adding a field berth reads is one edit here, plus its use in the normalisation of its kind.
"""
