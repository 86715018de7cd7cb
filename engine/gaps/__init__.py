"""Capability requests and misses: classify a need, record it in the gap log, report what users asked for."""

from .requests import MIN_CONFIDENCE, agents_with, classify, is_miss, record_miss, request_capability

__all__ = ["MIN_CONFIDENCE", "agents_with", "classify", "is_miss", "record_miss", "request_capability"]
