"""The Kafka wire protocol: generated message codec, headers, API table and error codes.

Pure code: bytes in, objects out.  No asyncio and no broker state.  ``api`` holds the entry
points (``decode_request``, ``encode_response``, ...); ``generated`` holds one generated module per
Kafka message; ``runtime`` the helpers they share; ``errors`` the error-code table.
"""
