"""Offline build steps: encoder export, vector store, parity fixtures, evaluation."""
