"""The data model: records and the ModelLog, importing nothing above it. monitor/ holds the
monitor's history (a feature's folder, as in every layer)."""
