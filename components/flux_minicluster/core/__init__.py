"""The pure core: spec model, hostlists, certificates and rendering. Never imports Pulumi."""
