"""The wire: one msgspec Struct per Kubernetes kind berth reads, with only the fields it reads.

This is the lowest layer of the core (it imports only msgspec and the standard library). Objects
are decoded straight from bytes (event lines, bus messages) or converted from Python objects
(snapshot files, JSON or YAML) into these Structs; `berth.core.convert` and its siblings then
normalise them into the core models. Unknown fields are ignored, every field is optional (null
reads as absent, as the API server's defaulting would), and quantities stay as they arrive.

Each kind's Struct is tagged by `kind` with its class name (an event's object decodes straight into
the right one), so a class is named after its kind.

Adding a field berth reads is one edit here, plus its use in the normalisation of its kind.
"""
