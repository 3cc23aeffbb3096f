"""busprobe's USB 3.0 SuperSpeed device: LUNA's SuperSpeed stack with busprobe's own endpoints."""
