"""The rank view (`LensWidget.from_logs`): one rank's log shown at a time, its traits, the
`showRank` request and protocol shapes."""
