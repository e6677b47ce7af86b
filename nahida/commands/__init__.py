"""Chat commands (`/help`, `/new`, `/sessions`, `/resume`, and later `/memory …`)."""
