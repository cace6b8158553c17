"""Tests of pi_lab.llm (models, clients, classification, conversion)."""
