"""asyncio listeners (one per mock broker), connections, framing and request dispatch."""
