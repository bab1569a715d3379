"""Peer suites: other projects' own test suites run against mockbroker."""
