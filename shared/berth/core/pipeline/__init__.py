"""The event pipeline's pure logic: the scorer and the buffer controller, one event at a time."""
