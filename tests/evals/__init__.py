"""Tests for evals (the check DSL, suites, runner)."""
