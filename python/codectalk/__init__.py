"""codectalk Python tools: the codes-stream client that decodes with the exported codec programs
(client.py, docs/CODES_WIRE.md)."""
