"""What agents already have, parsed into engramlog's terms (pure: no IO)."""
