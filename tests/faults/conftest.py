"""The fault campaign's totals ("fault campaign") are printed by tests/_campaign_totals.py,
which also carries them across pytest-xdist workers (docs/reliability.md quotes them)."""
