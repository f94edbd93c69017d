"""`stream-worker notify`: alerts delivered to the targets people act on (webhooks first), and the
`notify targets` commands that manage them."""
