"""Offline build steps: encoder export, vector store, docs index, confidence fit, catalog checks."""
