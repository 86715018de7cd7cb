"""Measurement: retrieval quality on the labelled sets, latency, load, tokens and the LLM benchmark."""
