"""What runs inside the VM harness's guests: shell scripts and a helper (docs/DESIGN.md §7.1)."""
