"""Display: tabulate and display."""
