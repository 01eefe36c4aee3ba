"""Tests of harness.workload / harness.observe.admin (see DESIGN.md "History")."""
