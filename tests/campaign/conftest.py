"""The campaign's totals ("bad input campaign: inputs tried") are printed by
tests/_campaign_totals.py, which also carries them across pytest-xdist workers."""
